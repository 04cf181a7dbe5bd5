// Package netguard decides, and enforces, where the provider may connect on a
// tenant's behalf: a remote cluster's API server a kubeconfig names, a GCP
// endpoint a ProviderConfig names. A tenant who may write such an address
// must not make the provider reach what only the provider can reach: its own
// pod (loopback), the metadata server (link-local), the cluster's Services and
// Pods and the private network around it. The platform team opens what it
// trusts by CIDR or by host name.
package netguard

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"strings"
	"syscall"
	"time"
)

// The provider flags a refusal names, so that the message says what to grant.
const (
	FlagAllowCIDR = "--allow-dial-cidr"
	FlagAllowHost = "--allow-dial-host"
	FlagDenyCIDR  = "--deny-dial-cidr"
)

// Why an address is refused.
const (
	ReasonUnspecified = "unspecified address"
	ReasonLoopback    = "loopback address"
	ReasonLinkLocal   = "link-local address (the metadata server's range)"
	ReasonMulticast   = "multicast address"
	ReasonPrivate     = "private address"
	ReasonShared      = "shared address space (100.64.0.0/10)"
	ReasonReserved    = "reserved address"
	ReasonService     = "the cluster's own API server Service"
	ReasonDenied      = "one of the cluster's own ranges (--deny-dial-cidr)"
	ReasonNetwork     = "not a TCP network"
)

const (
	// dialTimeout and keepAlive are http.DefaultTransport's.
	dialTimeout = 30 * time.Second
	keepAlive   = 30 * time.Second
	// checkTimeout bounds the name lookup of an early Check.
	checkTimeout = 5 * time.Second
)

var (
	shared   = netip.MustParsePrefix("100.64.0.0/10")
	reserved = []netip.Prefix{
		netip.MustParsePrefix("0.0.0.0/8"),   // "this network"
		netip.MustParsePrefix("240.0.0.0/4"), // reserved, and broadcast
	}
	// nat64 embeds an IPv4 address in its last 32 bits: 64:ff9b::7f00:1 is
	// 127.0.0.1 where a NAT64 gateway translates.
	nat64 = netip.MustParsePrefix("64:ff9b::/96")
)

// A Resolver looks a host name up; *net.Resolver is one.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// A Policy refuses loopback, link-local (incl. 169.254.169.254, fe80::/10),
// private (10/8, 172.16/12, 192.168/16, 100.64/10, fc00::/7), unspecified,
// multicast and the cluster's own ranges (the kubernetes Service host from
// KUBERNETES_SERVICE_HOST, plus any Deny CIDRs given) unless an Allow CIDR
// or AllowHost covers it. A nil *Policy is New(nil, nil, nil): it refuses
// all of those and allows nothing more.
type Policy struct {
	allow      []netip.Prefix
	allowHosts map[string]bool
	deny       []netip.Prefix
	service    netip.Addr // the kubernetes Service's address, if known
	resolver   Resolver
}

// New returns the Policy that allows allowCIDRs and the addresses
// allowHosts (exact names) resolve to, and refuses denyCIDRs besides what
// every Policy refuses.
func New(allowCIDRs []netip.Prefix, allowHosts []string, denyCIDRs []netip.Prefix) *Policy {
	return newPolicy(allowCIDRs, allowHosts, denyCIDRs, os.Getenv("KUBERNETES_SERVICE_HOST"))
}

func newPolicy(allowCIDRs []netip.Prefix, allowHosts []string, denyCIDRs []netip.Prefix, serviceHost string) *Policy {
	p := &Policy{allowHosts: map[string]bool{}, resolver: net.DefaultResolver}
	for _, c := range allowCIDRs {
		p.allow = append(p.allow, c.Masked())
	}
	for _, c := range denyCIDRs {
		p.deny = append(p.deny, c.Masked())
	}
	for _, h := range allowHosts {
		p.allowHosts[canonicalHost(h)] = true
	}
	if a, err := netip.ParseAddr(serviceHost); err == nil {
		p.service = a.Unmap()
	}
	return p
}

// WithResolver returns a copy of p that looks names up with r: tests use it
// to resolve a name to whatever address they need.
func (p *Policy) WithResolver(r Resolver) *Policy {
	c := *p.orDefault()
	c.resolver = r
	return &c
}

// defaultPolicy is what a nil *Policy enforces.
var defaultPolicy = New(nil, nil, nil)

func (p *Policy) orDefault() *Policy {
	if p == nil {
		return defaultPolicy
	}
	return p
}

// Refused is a connection a Policy refuses, and why.
type Refused struct {
	// Host is the name the address was looked up for, "" when the
	// address itself was named.
	Host string
	// Addr is the address refused, invalid for a network refused.
	Addr netip.Addr
	// Port is the port asked for, "" when none was.
	Port string
	// Reason says what the address is (ReasonPrivate, ...).
	Reason string
}

func (e *Refused) Error() string {
	if !e.Addr.IsValid() {
		return fmt.Sprintf("connection to %s refused: %s", e.Host, e.Reason)
	}
	target := e.Addr.String()
	if e.Port != "" {
		target = net.JoinHostPort(target, e.Port)
	}
	if e.Host != "" {
		target = e.Host + " (" + target + ")"
	}
	how := "the provider flag " + FlagAllowCIDR
	if e.Host != "" {
		how += " or " + FlagAllowHost + "=" + e.Host
	}
	return fmt.Sprintf("connection to %s refused: %s; the platform team can allow it with %s", target, e.Reason, how)
}

// Check refuses host (a URL's host, with or without its port) early, before
// any connection, so that an object can say why at once. A name is looked
// up, and refused when any address it has is; a name that does not resolve
// passes (DialContext will say so). DialContext checks again, on the
// address it dials.
func (p *Policy) Check(host string) error {
	p = p.orDefault()
	name, port := splitHostPort(host)
	if a, err := netip.ParseAddr(name); err == nil {
		return p.checkAddr("", a, port)
	}
	if p.allowHosts[canonicalHost(name)] {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), checkTimeout)
	defer cancel()
	addrs, err := p.resolver.LookupNetIP(ctx, "ip", name)
	if err != nil {
		return nil
	}
	for _, a := range addrs {
		if err := p.checkAddr(name, a, port); err != nil {
			return err
		}
	}
	return nil
}

// DialContext connects to addr ("host:port") when the policy allows it. It
// resolves the host itself and checks every address it resolves to (one
// refused address refuses the name), then dials only a checked address, so
// a name that resolves elsewhere the second time (DNS rebinding) reaches
// nothing unchecked; the dialer checks the socket's address once more
// before connecting.
func (p *Policy) DialContext(ctx context.Context, network, addr string) (net.Conn, error) {
	p = p.orDefault()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, err
	}
	if network != "tcp" && network != "tcp4" && network != "tcp6" {
		return nil, &Refused{Host: addr, Reason: ReasonNetwork + " (" + network + ")"}
	}
	addrs, err := p.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	named := host
	if _, err := netip.ParseAddr(host); err == nil {
		named = ""
	}
	for _, a := range addrs {
		if err := p.checkAddr(named, a, port); err != nil {
			return nil, err
		}
	}
	d := &net.Dialer{Timeout: dialTimeout, KeepAlive: keepAlive, Control: p.control(named)}
	var first error
	for _, a := range addrs {
		c, err := d.DialContext(ctx, network, net.JoinHostPort(a.String(), port))
		if err == nil {
			return c, nil
		}
		if first == nil {
			first = err
		}
	}
	return nil, first
}

// Transport is an http.Transport that connects only where p allows:
// http.DefaultTransport's settings with p's DialContext, never a proxy (not
// the environment's, not one a kubeconfig names: a proxy would connect
// where p never looked), and TLS verified.
func (p *Policy) Transport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.Proxy = nil
	t.DialContext = p.DialContext
	t.DialTLSContext = nil
	t.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return t
}

// resolve returns host's addresses for network: host itself when it is an
// address.
func (p *Policy) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(strings.Trim(host, "[]")); err == nil {
		return []netip.Addr{a}, nil
	}
	ipNet := map[string]string{"tcp": "ip", "tcp4": "ip4", "tcp6": "ip6"}[network]
	addrs, err := p.resolver.LookupNetIP(ctx, ipNet, host)
	if err != nil {
		return nil, err
	}
	if len(addrs) == 0 {
		return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	return addrs, nil
}

// control re-checks the address the socket connects to.
func (p *Policy) control(host string) func(network, address string, _ syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return &Refused{Host: address, Reason: ReasonNetwork + " (" + network + ")"}
		}
		return p.checkAddr(host, ap.Addr(), fmt.Sprint(ap.Port()))
	}
}

// checkAddr returns a *Refused when a, resolved from host ("" for none),
// may not be connected to.
func (p *Policy) checkAddr(host string, a netip.Addr, port string) error {
	a = a.Unmap().WithZone("")
	if p.allowed(host, a) {
		return nil
	}
	if why := p.refusal(a); why != "" {
		return &Refused{Host: host, Addr: a, Port: port, Reason: why}
	}
	return nil
}

func (p *Policy) allowed(host string, a netip.Addr) bool {
	if host != "" && p.allowHosts[canonicalHost(host)] {
		return true
	}
	for _, c := range p.allow {
		if c.Contains(a) {
			return true
		}
	}
	return false
}

// refusal says why a is refused, "" when it is not.
func (p *Policy) refusal(a netip.Addr) string {
	if nat64.Contains(a) {
		b := a.As16()
		if why := p.refusal(netip.AddrFrom4([4]byte(b[12:]))); why != "" {
			return why + ", embedded in a NAT64 address"
		}
	}
	switch {
	case !a.IsValid() || a.IsUnspecified():
		return ReasonUnspecified
	case a.IsLoopback():
		return ReasonLoopback
	case a.IsLinkLocalUnicast():
		return ReasonLinkLocal
	case a.IsMulticast():
		return ReasonMulticast
	case p.service.IsValid() && a == p.service:
		return ReasonService
	case a.IsPrivate():
		return ReasonPrivate
	case shared.Contains(a):
		return ReasonShared
	}
	for _, c := range reserved {
		if c.Contains(a) {
			return ReasonReserved
		}
	}
	for _, c := range p.deny {
		if c.Contains(a) {
			return ReasonDenied
		}
	}
	return ""
}

// splitHostPort is host and port of a URL host, with or without its port,
// an IPv6 address in brackets or not.
func splitHostPort(hostport string) (string, string) {
	if h, port, err := net.SplitHostPort(hostport); err == nil {
		return h, port
	}
	return strings.Trim(hostport, "[]"), ""
}

// canonicalHost is a name as compared: lower case, without a final dot.
func canonicalHost(h string) string {
	return strings.TrimSuffix(strings.ToLower(h), ".")
}
