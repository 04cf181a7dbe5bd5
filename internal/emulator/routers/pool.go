package routers

import (
	"net/netip"
	"slices"
	"strings"
)

// portsPerAddress are the source ports one NAT address gives its VMs
// (1024 to 65535), as Cloud NAT documents.
const portsPerAddress = 64512

// portsPerVM is how many ports the NAT reserves for each VM: minPortsPerVm
// rounded up to a power of two, else the documented default (64, or 32
// with dynamic port allocation).
func (n *nat) portsPerVM() int {
	p := int(n.Spec.MinPortsPerVm)
	if p <= 0 {
		p = 64
		if n.Spec.EnableDynamicPortAllocation {
			p = 32
		}
	}
	pow := 1
	for pow < p {
		pow <<= 1
	}
	return pow
}

// neededFor is how many addresses vms VMs need at the NAT's ports per VM.
func (n *nat) neededFor(vms int) int {
	return (vms*n.portsPerVM() + portsPerAddress - 1) / portsPerAddress
}

// A pool hands out AUTO_ONLY addresses: 34.127.0.1 on, in order, never
// the same one twice until it wraps (chosen: GCP documents that the next
// auto address cannot be predicted, so no client may rely on the order).
type pool struct{ next uint32 }

var autoBase = netip.MustParseAddr("34.127.0.1")

func (p *pool) take() string {
	n := p.next % (1<<16 - 2) // stay inside 34.127.0.0/16
	p.next++
	b := autoBase.As4()
	v := uint32(b[2])<<8 | uint32(b[3]) + n
	return netip.AddrFrom4([4]byte{b[0], b[1], byte(v >> 8), byte(v)}).String()
}

// ipsOf are the IPs of the static addresses at urls, as the NAT holds them.
func (n *nat) ipsOf(urls []string) []string {
	out := make([]string, len(urls))
	for i, u := range urls {
		out[i] = n.IPs[u]
	}
	return out
}

// addressPath is an address URL from projects/ on.
func addressPath(url string) string {
	if i := strings.Index(url, "projects/"); i >= 0 {
		return url[i:]
	}
	return url
}

// settle makes an AUTO_ONLY NAT hold Needed addresses: it allocates new
// ones from the pool, or releases the newest into draining, as Cloud NAT
// adds and removes addresses when the VMs' need for ports changes. A NAT
// that is not AUTO_ONLY gives its auto addresses back at once (GCP deletes
// them when the NAT switches to manual).
func (a *API) settle(n *nat) {
	if n.Spec.NatIpAllocateOption != autoOnly {
		n.Auto, n.AutoDrain = nil, nil
		return
	}
	for len(n.Auto) < n.Needed {
		n.Auto = append(n.Auto, a.pool.take())
	}
	for len(n.Auto) > max(n.Needed, 0) {
		last := n.Auto[len(n.Auto)-1]
		n.Auto = n.Auto[:len(n.Auto)-1]
		n.AutoDrain = append(n.AutoDrain, last)
	}
}

// release moves the active auto address ip (the newest when "") to
// draining and lowers Needed, so that settle keeps it there.
func (a *API) release(n *nat, ip string) bool {
	i := len(n.Auto) - 1
	if ip != "" {
		i = slices.Index(n.Auto, ip)
	}
	if i < 0 {
		return false
	}
	n.AutoDrain = append(n.AutoDrain, n.Auto[i])
	n.Auto = slices.Delete(n.Auto, i, i+1)
	n.Needed = len(n.Auto)
	return true
}
