package netguard

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// resolverFn resolves names as a test says.
type resolverFn func(host string) ([]netip.Addr, error)

func (f resolverFn) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	return f(host)
}

// names resolves the names a test uses, and nothing else.
var names = resolverFn(func(host string) ([]netip.Addr, error) {
	switch host {
	case "localhost", "sneaky.example.com":
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	case "mixed.example.com":
		return []netip.Addr{netip.MustParseAddr("203.0.113.7"), netip.MustParseAddr("10.1.2.3")}, nil
	case "public.example.com":
		return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
	case "cluster.internal":
		return []netip.Addr{netip.MustParseAddr("10.96.0.1")}, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
})

func TestCheck(t *testing.T) {
	p := newPolicy(
		[]netip.Prefix{netip.MustParsePrefix("192.168.7.0/24")},
		[]string{"Cluster.Internal."},
		[]netip.Prefix{netip.MustParsePrefix("203.0.113.128/25")},
		"10.96.0.1",
	).WithResolver(names)

	cases := map[string]struct {
		reason string
		host   string
		want   string // "" allowed, else the refusal's message
	}{
		"LoopbackV4": {
			reason: "The provider's own pod is never a remote server.",
			host:   "127.0.0.1:6443",
			want:   "connection to 127.0.0.1:6443 refused: loopback address; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"LoopbackV4Other": {
			reason: "All of 127/8 is loopback.",
			host:   "127.9.9.9",
			want:   "connection to 127.9.9.9 refused: loopback address; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"LoopbackV6": {
			reason: "IPv6 loopback, in brackets as a URL writes it.",
			host:   "[::1]:443",
			want:   "connection to [::1]:443 refused: loopback address; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"MappedLoopback": {
			reason: "An IPv4-mapped IPv6 address is the IPv4 address it maps.",
			host:   "[::ffff:127.0.0.1]:443",
			want:   "connection to 127.0.0.1:443 refused: loopback address; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"MetadataServer": {
			reason: "The metadata server hands out the pod's Google token.",
			host:   "169.254.169.254",
			want:   "connection to 169.254.169.254 refused: link-local address (the metadata server's range); the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"LinkLocalV6": {
			reason: "fe80::/10 is link-local too.",
			host:   "[fe80::1]:443",
			want:   "connection to [fe80::1]:443 refused: link-local address (the metadata server's range); the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"Private10": {
			reason: "Private networks are refused.",
			host:   "10.0.0.7:443",
			want:   "connection to 10.0.0.7:443 refused: private address; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"PrivateULA": {
			reason: "fc00::/7 is private too.",
			host:   "[fd00::1]:443",
			want:   "connection to [fd00::1]:443 refused: private address; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"SharedAddressSpace": {
			reason: "100.64/10 (carrier-grade NAT, GKE's non-RFC 1918 ranges) is refused.",
			host:   "100.64.1.2",
			want:   "connection to 100.64.1.2 refused: shared address space (100.64.0.0/10); the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"Unspecified": {
			reason: "0.0.0.0 reaches the local host.",
			host:   "0.0.0.0:443",
			want:   "connection to 0.0.0.0:443 refused: unspecified address; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"Multicast": {
			reason: "Multicast is no server.",
			host:   "224.0.0.1",
			want:   "connection to 224.0.0.1 refused: multicast address; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"NAT64Loopback": {
			reason: "A NAT64 address embedding loopback is loopback where a NAT64 gateway translates it.",
			host:   "[64:ff9b::7f00:1]:443",
			want:   "connection to [64:ff9b::7f00:1]:443 refused: loopback address, embedded in a NAT64 address; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"ServiceHost": {
			reason: "The cluster's own API server, by its Service address.",
			host:   "10.96.0.1:443",
			want:   "connection to 10.96.0.1:443 refused: the cluster's own API server Service; the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"DenyCIDR": {
			reason: "A range the platform team denies (its Pods, say) is refused even when public.",
			host:   "203.0.113.200",
			want:   "connection to 203.0.113.200 refused: one of the cluster's own ranges (--deny-dial-cidr); the platform team can allow it with the provider flag --allow-dial-cidr",
		},
		"NameResolvingToLoopback": {
			reason: "A name is refused by what it resolves to, and the message names both.",
			host:   "sneaky.example.com:6443",
			want:   "connection to sneaky.example.com (127.0.0.1:6443) refused: loopback address; the platform team can allow it with the provider flag --allow-dial-cidr or --allow-dial-host=sneaky.example.com",
		},
		"NameWithOnePrivateAddress": {
			reason: "One refused address refuses the name: the dialer could pick either.",
			host:   "mixed.example.com",
			want:   "connection to mixed.example.com (10.1.2.3) refused: private address; the platform team can allow it with the provider flag --allow-dial-cidr or --allow-dial-host=mixed.example.com",
		},
		"Public": {
			reason: "A public address is allowed.",
			host:   "203.0.113.7:443",
		},
		"PublicName": {
			reason: "A name of public addresses is allowed.",
			host:   "public.example.com:443",
		},
		"AllowedCIDR": {
			reason: "An allowed CIDR opens a private range.",
			host:   "192.168.7.9:443",
		},
		"AllowedHost": {
			reason: "An allowed host's addresses are allowed, however they are named (case, final dot).",
			host:   "cluster.internal:443",
		},
		"Unresolvable": {
			reason: "A name that does not resolve passes the early check: dialing it will say why.",
			host:   "nowhere.example.com",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if err := p.Check(tc.host); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nCheck(%q): -want, +got:\n%s", tc.reason, tc.host, diff)
			}
		})
	}
}

// loopbackServer counts the connections it accepts.
func loopbackServer(t *testing.T) (string, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) }))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			n.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &n
}

// TestDialContext checks, by what a server on loopback receives, that the
// dialer connects only where the policy allows, and that a name that
// resolves elsewhere on the second look (DNS rebinding) reaches nothing
// unchecked.
func TestDialContext(t *testing.T) {
	type want struct {
		Err         string // a part of the error
		Connections int32
	}
	cases := map[string]struct {
		reason   string
		policy   func(r Resolver) *Policy
		resolver func(addr string) Resolver
		host     string // what is dialed; "" the server's address
		want     want
	}{
		"LoopbackRefused": {
			reason: "A server on loopback is refused, and never connected to.",
			policy: func(r Resolver) *Policy { return newPolicy(nil, nil, nil, "").WithResolver(r) },
			want:   want{Err: "loopback address"},
		},
		"LoopbackAllowed": {
			reason: "An allowed CIDR lets the dialer reach it.",
			policy: func(r Resolver) *Policy {
				return newPolicy([]netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, nil, nil, "").WithResolver(r)
			},
			want: want{Connections: 1},
		},
		"AllowedHost": {
			reason: "An allowed host reaches the loopback address it resolves to.",
			policy: func(r Resolver) *Policy { return newPolicy(nil, []string{"test.local"}, nil, "").WithResolver(r) },
			host:   "test.local",
			want:   want{Connections: 1},
		},
		"NameToLoopbackRefused": {
			reason: "A name that resolves to loopback is refused.",
			policy: func(r Resolver) *Policy { return newPolicy(nil, nil, nil, "").WithResolver(r) },
			host:   "test.local",
			want:   want{Err: "connection to test.local (127.0.0.1:"},
		},
		"Rebinding": {
			reason: "A name public when checked and loopback when dialed is refused at the dial: only the address checked is dialed.",
			policy: func(r Resolver) *Policy { return newPolicy(nil, nil, nil, "").WithResolver(r) },
			host:   "rebind.test",
			want:   want{Err: "connection to rebind.test (127.0.0.1:"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			addr, conns := loopbackServer(t)
			host, port, _ := net.SplitHostPort(addr)
			var looks atomic.Int32
			r := resolverFn(func(string) ([]netip.Addr, error) {
				// rebind.test is public the first time it is looked up.
				if looks.Add(1) == 1 && tc.host == "rebind.test" {
					return []netip.Addr{netip.MustParseAddr("203.0.113.7")}, nil
				}
				return []netip.Addr{netip.MustParseAddr(host)}, nil
			})
			p := tc.policy(r)
			target := addr
			if tc.host != "" {
				target = net.JoinHostPort(tc.host, port)
			}
			if tc.host == "rebind.test" {
				if err := p.Check(target); err != nil {
					t.Fatalf("%s\nCheck: the first look must pass: %v", tc.reason, err)
				}
			}
			got := want{}
			c, err := p.DialContext(context.Background(), "tcp", target)
			if err != nil {
				got.Err = err.Error()
				if strings.Contains(got.Err, tc.want.Err) && tc.want.Err != "" {
					got.Err = tc.want.Err
				}
				var refused *Refused
				if !errors.As(err, &refused) {
					t.Errorf("%s\nthe error is no *Refused: %v", tc.reason, err)
				}
			} else {
				_, _ = c.Write([]byte("GET / HTTP/1.0\r\n\r\n"))
				_, _ = c.Read(make([]byte, 1))
				_ = c.Close()
			}
			got.Connections = conns.Load()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nDialContext: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestControlRechecks checks the socket's own check: an address that
// reaches the dialer unchecked is refused before it connects.
func TestControlRechecks(t *testing.T) {
	p := newPolicy(nil, nil, nil, "")
	err := p.control("")("tcp4", "127.0.0.1:443", nil)
	var refused *Refused
	if !errors.As(err, &refused) || refused.Reason != ReasonLoopback {
		t.Errorf("control(...): want a loopback refusal, got %v", err)
	}
	if err := p.control("")("tcp4", "203.0.113.7:443", nil); err != nil {
		t.Errorf("control(...): a public address is refused: %v", err)
	}
}

// TestTransport checks that the transport never uses a proxy, however the
// environment names one, and verifies TLS.
func TestTransport(t *testing.T) {
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	tr := newPolicy(nil, nil, nil, "").Transport()
	if tr.Proxy != nil {
		t.Error("Transport(): has a proxy function")
	}
	if tr.TLSClientConfig == nil || tr.TLSClientConfig.InsecureSkipVerify {
		t.Error("Transport(): TLS is not verified")
	}
	if tr.DialContext == nil {
		t.Error("Transport(): dials without the policy")
	}
}

// TestNilPolicy checks that a nil policy refuses what every policy refuses.
func TestNilPolicy(t *testing.T) {
	var p *Policy
	if err := p.Check("127.0.0.1"); err == nil {
		t.Error("a nil Policy allows loopback")
	}
}
