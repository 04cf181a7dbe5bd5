// Command node boots the real single-node cluster of cluster/node, installs
// Crossplane from its Helm chart, prints how to reach it, and tears it all
// down on Ctrl-C. Run it as root from the repository root:
//
//	go run ./cluster/node/cmd/node
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
)

func main() {
	crossplane := flag.Bool("crossplane", true, "install Crossplane from its Helm chart")
	flag.Parse()
	if err := run(*crossplane); err != nil {
		fmt.Fprintln(os.Stderr, "node:", err)
		os.Exit(1)
	}
}

func run(crossplane bool) error {
	if err := node.RequireRoot(); err != nil {
		return err
	}
	ctx, stop := node.NotifyContext(context.Background())
	defer stop()
	repo, err := os.Getwd()
	if err != nil {
		return err
	}
	tmp, err := node.MkdirTemp("node-tools-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	tools, err := node.ResolveTools(repo, tmp)
	if err != nil {
		return err
	}
	n, err := node.Up(ctx, node.Config{Tools: tools, Logf: log.Printf, Lock: node.InheritedLock()})
	if err != nil {
		return err
	}
	defer func() {
		if err := n.Down(); err != nil {
			log.Printf("teardown: %v", err)
		}
	}()
	if crossplane {
		if err := n.InstallCrossplane(ctx); err != nil {
			return err
		}
	}
	out, err := n.Kubectl(ctx, "get", "pods", "-A", "-o", "wide")
	if err != nil {
		return err
	}
	fmt.Print(out)
	fmt.Printf("\nexport KUBECONFIG=%s   # Ctrl-C tears the node down\n", n.Kubeconfig)
	<-ctx.Done()
	return nil
}
