// Command coredns is CoreDNS with four plugins: errors, health, ready and
// kubernetes. It has no forward plugin, so the cluster's DNS answers only
// cluster names and never sends a query off the node.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/ready"
)

// The directive list sets both which plugins a Corefile may name and their
// order in the chain.
func init() { dnsserver.Directives = []string{"errors", "health", "ready", "kubernetes"} }

func main() { coremain.Run() }
