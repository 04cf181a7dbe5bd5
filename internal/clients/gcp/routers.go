package gcp

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/api/compute/v1"
)

// A NAT is what an allowlist needs of one Cloud NAT gateway, from its
// router's status.
type NAT struct {
	Name string
	// Active are the addresses the NAT sends from: allocated automatically
	// (autoAllocatedNatIps), by hand (userAllocatedNatIps), and those of
	// its rules (ruleStatus activeNatIps).
	Active []netip.Prefix
	// Draining are addresses taken out of the NAT that still carry the
	// connections they had (drain*NatIps, ruleStatus drainNatIps), until
	// GCP stops reporting them.
	Draining []netip.Prefix
	// MinExtraIPsNeeded is how many more addresses the NAT needs for every
	// VM to get its ports (minExtraNatIpsNeeded, its rules' included): VMs
	// without ports cannot open connections, from any address.
	MinExtraIPsNeeded int64
	// Invalid are addresses GCP returned that do not parse, as
	// "field value".
	Invalid []string
}

// A NATClient reads Cloud NAT gateways.
type NATClient interface {
	// Routers lists the names of the Cloud Routers of project in region
	// whose network is network, sorted: one routers.list call per page.
	Routers(ctx context.Context, project, region, network string) ([]string, error)

	// NATs reads the status of every NAT of a router, sorted by name: one
	// routers.getRouterStatus call.
	NATs(ctx context.Context, project, region, router string) ([]NAT, error)
}

// NATs returns the Client's NATClient.
func (c *Client) NATs() NATClient { return natClient{c} }

type natClient struct{ *Client }

// Routers filters by network here, not with a list filter: a region has
// few routers, and a router's network is a URL whose form (full or
// relative) then does not matter.
func (c natClient) Routers(ctx context.Context, project, region, network string) ([]string, error) {
	var out []string
	call := c.svc.Routers.List(project, region).Context(ctx)
	for token, page := "", 0; ; page++ {
		if page == MaxListPages {
			return nil, errTooManyPages("routers.list")
		}
		l, err := call.PageToken(token).Do()
		// Each page is a call GCP counts against the project's quota.
		c.calls.record(MethodRouterList, err)
		if err != nil {
			return nil, err
		}
		for _, r := range l.Items {
			if lastSegment(r.Network) == network {
				out = append(out, r.Name)
			}
		}
		if token = l.NextPageToken; token == "" {
			break
		}
	}
	slices.Sort(out)
	return out, nil
}

func (c natClient) NATs(ctx context.Context, project, region, router string) ([]NAT, error) {
	s, err := c.svc.Routers.GetRouterStatus(project, region, router).Context(ctx).Do()
	c.calls.record(MethodRouterGetStatus, err)
	if err != nil {
		return nil, err
	}
	return NATsOf(s), nil
}

// NATsOf extracts the NATs of a router's status, sorted by name.
func NATsOf(s *compute.RouterStatusResponse) []NAT {
	if s == nil || s.Result == nil {
		return nil
	}
	out := make([]NAT, 0, len(s.Result.NatStatus))
	for _, ns := range s.Result.NatStatus {
		if ns != nil {
			out = append(out, natOf(ns))
		}
	}
	slices.SortFunc(out, func(a, b NAT) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// natOf extracts one NAT's addresses and its need of more.
func natOf(ns *compute.RouterStatusNatStatus) NAT {
	n := NAT{Name: ns.Name, MinExtraIPsNeeded: ns.MinExtraNatIpsNeeded}
	n.Active = n.parse(n.Active, "autoAllocatedNatIps", ns.AutoAllocatedNatIps)
	n.Active = n.parse(n.Active, "userAllocatedNatIps", ns.UserAllocatedNatIps)
	n.Draining = n.parse(n.Draining, "drainAutoAllocatedNatIps", ns.DrainAutoAllocatedNatIps)
	n.Draining = n.parse(n.Draining, "drainUserAllocatedNatIps", ns.DrainUserAllocatedNatIps)
	for _, r := range ns.RuleStatus {
		if r == nil {
			continue
		}
		n.Active = n.parse(n.Active, fmt.Sprintf("ruleStatus[%d].activeNatIps", r.RuleNumber), r.ActiveNatIps)
		n.Draining = n.parse(n.Draining, fmt.Sprintf("ruleStatus[%d].drainNatIps", r.RuleNumber), r.DrainNatIps)
		n.MinExtraIPsNeeded += r.MinExtraIpsNeeded
	}
	return n
}

// parse appends addresses (of field) to to as host prefixes; one that does
// not parse goes to Invalid. GCP gives plain addresses, never CIDRs.
func (n *NAT) parse(to []netip.Prefix, field string, addresses []string) []netip.Prefix {
	for _, a := range addresses {
		ip, err := netip.ParseAddr(strings.TrimSpace(a))
		if err != nil {
			n.Invalid = append(n.Invalid, fmt.Sprintf("%s %q", field, a))
			continue
		}
		ip = ip.Unmap().WithZone("")
		to = append(to, netip.PrefixFrom(ip, ip.BitLen()))
	}
	return to
}
