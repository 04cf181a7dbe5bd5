package routers

import (
	"encoding/json"
	"slices"
	"strconv"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// NAT IP allocation options and the usages and modes getNatIpInfo reports.
const (
	autoOnly   = "AUTO_ONLY"
	manualOnly = "MANUAL_ONLY"
	modeAuto   = "AUTO"
	modeManual = "MANUAL"
	inUse      = "IN_USE"
	unused     = "UNUSED"
)

// A router is one Cloud Router.
type router struct {
	Scope       core.Scope
	Name        string
	ID          uint64
	Created     time.Time
	Description string
	Network     string // the network's full URL
	// Extra are the fields the emulator keeps without modelling them (bgp,
	// bgpPeers, interfaces, ...), echoed as sent.
	Extra map[string]any
	NATs  []*nat
}

// A nat is one NAT gateway of a router: its configuration as the client
// sent it (natIps and drainNatIps as full URLs) and what GCP would decide
// at run time.
type nat struct {
	Spec compute.RouterNat
	// Auto are the addresses AUTO_ONLY holds, in allocation order;
	// AutoDrain those it released that still serve connections.
	Auto, AutoDrain []string
	// Drained are the drainNatIps URLs whose connections have all closed.
	Drained []string
	// IPs are the IPs of the static addresses natIps and drainNatIps
	// name, by URL. An address a NAT names cannot be deleted, nor its IP
	// change, so they stay right for as long as the NAT names it.
	IPs map[string]string
	// Needed is how many addresses the NAT's VMs need, VMs how many VM
	// endpoints it serves (numVmEndpointsWithNatMappings).
	Needed, VMs int
}

func routerPath(sc core.Scope, name string) string { return sc.ObjectPath("routers", name) }

func (rt *router) path() string { return routerPath(rt.Scope, rt.Name) }

// nat is the router's NAT of that name; nil if none (or no router).
func (rt *router) nat(name string) *nat {
	if rt == nil {
		return nil
	}
	for _, n := range rt.NATs {
		if n.Spec.Name == name {
			return n
		}
	}
	return nil
}

// render is the router as GET returns it.
func (rt *router) render() map[string]any {
	m := core.CloneMap(rt.Extra)
	if m == nil {
		m = map[string]any{}
	}
	m["kind"] = "compute#router"
	m["id"] = strconv.FormatUint(rt.ID, 10)
	m["creationTimestamp"] = core.Timestamp(rt.Created)
	m["name"] = rt.Name
	m["region"] = rt.Scope.RegionURL()
	m["network"] = rt.Network
	m["selfLink"] = core.ComputeRoot + rt.path()
	if rt.Description != "" {
		m["description"] = rt.Description
	}
	if len(rt.NATs) > 0 {
		nats := make([]any, len(rt.NATs))
		for i, n := range rt.NATs {
			nats[i] = n.render()
		}
		m["nats"] = nats
	}
	return m
}

// render is the NAT's configuration with the defaults GCP documents for
// what was left out: a PUBLIC NAT of VM endpoints.
func (n *nat) render() map[string]any {
	b, _ := json.Marshal(n.Spec)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	if _, ok := m["type"]; !ok {
		m["type"] = "PUBLIC"
	}
	if _, ok := m["endpointTypes"]; !ok {
		m["endpointTypes"] = []any{"ENDPOINT_TYPE_VM"}
	}
	return m
}

// status is the NAT's entry of getRouterStatus. minExtraNatIpsNeeded only
// ever counts for MANUAL_ONLY: AUTO_ONLY allocates what it needs itself.
func (n *nat) status() map[string]any {
	m := map[string]any{"name": n.Spec.Name}
	set := func(k string, v []string) {
		if len(v) > 0 {
			m[k] = slices.Clone(v)
		}
	}
	if n.Spec.NatIpAllocateOption == autoOnly {
		set("autoAllocatedNatIps", n.Auto)
		set("drainAutoAllocatedNatIps", n.AutoDrain)
	} else {
		set("userAllocatedNatIps", n.ipsOf(n.Spec.NatIps))
		set("userAllocatedNatIpResources", n.Spec.NatIps)
		set("drainUserAllocatedNatIps", n.ipsOf(n.Spec.DrainNatIps))
		if extra := n.Needed - len(n.Spec.NatIps); extra > 0 {
			m["minExtraNatIpsNeeded"] = extra
		}
	}
	if vms := n.mappedVMs(); vms > 0 {
		m["numVmEndpointsWithNatMappings"] = vms
	}
	return m
}

// mappedVMs is how many of the NAT's VMs got ports: all of them, unless a
// MANUAL_ONLY NAT has too few addresses for them, when those that fit.
func (n *nat) mappedVMs() int {
	if n.Spec.NatIpAllocateOption == autoOnly || len(n.Spec.NatIps) >= n.Needed {
		return n.VMs
	}
	return min(n.VMs, len(n.Spec.NatIps)*portsPerAddress/n.portsPerVM())
}

// ipInfo is the NAT's entry of getNatIpInfo: every address it holds, the
// first Needed active ones IN_USE, draining ones IN_USE until their
// connections close, the rest UNUSED.
func (n *nat) ipInfo() map[string]any {
	var out []any
	add := func(ip, mode string, used bool) {
		usage := unused
		if used {
			usage = inUse
		}
		out = append(out, map[string]any{"natIp": ip, "mode": mode, "usage": usage})
	}
	mode, active := modeAuto, n.Auto
	var draining []string
	if n.Spec.NatIpAllocateOption == autoOnly {
		draining = n.AutoDrain
	} else {
		mode, active = modeManual, n.ipsOf(n.Spec.NatIps)
	}
	for i, ip := range active {
		add(ip, mode, i < n.Needed)
	}
	for _, ip := range draining {
		add(ip, mode, true)
	}
	if mode == modeManual {
		for _, url := range n.Spec.DrainNatIps {
			add(n.IPs[url], mode, !slices.Contains(n.Drained, url))
		}
	}
	m := map[string]any{"natName": n.Spec.Name}
	if len(out) > 0 {
		m["natIpInfoMappings"] = out
	}
	return m
}
