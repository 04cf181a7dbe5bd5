package gcp

import (
	"context"
	"net/http"
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/compute/v1"
)

var samePrefix = cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })

func TestNATsOf(t *testing.T) {
	p := netip.MustParsePrefix
	cases := map[string]struct {
		reason string
		in     *compute.RouterStatusResponse
		want   []NAT
	}{
		"NoResult": {
			reason: "A router without a result has no NAT.",
			in:     &compute.RouterStatusResponse{},
		},
		"EveryKind": {
			reason: "Auto, manual, draining and rule addresses are all read; rules add to the need of more.",
			in: &compute.RouterStatusResponse{Result: &compute.RouterStatus{NatStatus: []*compute.RouterStatusNatStatus{{
				Name:                     "egress-nat",
				AutoAllocatedNatIps:      []string{"203.0.113.1"},
				UserAllocatedNatIps:      []string{"203.0.113.2"},
				DrainAutoAllocatedNatIps: []string{"203.0.113.3"},
				DrainUserAllocatedNatIps: []string{"203.0.113.4"},
				MinExtraNatIpsNeeded:     1,
				RuleStatus: []*compute.RouterStatusNatStatusNatRuleStatus{{
					RuleNumber: 100, ActiveNatIps: []string{"198.51.100.1"}, DrainNatIps: []string{"198.51.100.2"}, MinExtraIpsNeeded: 2,
				}},
			}}}},
			want: []NAT{{
				Name:              "egress-nat",
				Active:            []netip.Prefix{p("203.0.113.1/32"), p("203.0.113.2/32"), p("198.51.100.1/32")},
				Draining:          []netip.Prefix{p("203.0.113.3/32"), p("203.0.113.4/32"), p("198.51.100.2/32")},
				MinExtraIPsNeeded: 3,
			}},
		},
		"SortedInvalidKept": {
			reason: "NATs come sorted by name; an address that does not parse is named, the rest kept.",
			in: &compute.RouterStatusResponse{Result: &compute.RouterStatus{NatStatus: []*compute.RouterStatusNatStatus{
				{Name: "b", AutoAllocatedNatIps: []string{"not-an-ip", "2001:db8::1"}},
				{Name: "a"},
			}}},
			want: []NAT{{Name: "a"}, {Name: "b", Active: []netip.Prefix{p("2001:db8::1/128")}, Invalid: []string{`autoAllocatedNatIps "not-an-ip"`}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, NATsOf(tc.in), samePrefix, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nNATsOf(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestNATClient reads routers through the official client from canned GCP
// answers: the network filter, pages, and one counted call each.
func TestNATClient(t *testing.T) {
	ctx := context.Background()
	f, svc := newFakeGCP(t, routes{
		"GET /regions/us-central1/routers": {
			ok(`{"items":[{"name":"egress","network":"https://www.googleapis.com/compute/v1/projects/p/global/networks/vpc"},
				{"name":"other","network":"projects/p/global/networks/other"}],"nextPageToken":"t2"}`),
			ok(`{"items":[{"name":"alpha","network":"global/networks/vpc"}]}`),
		},
		"GET /regions/us-central1/routers/egress/getRouterStatus": {
			ok(`{"kind":"compute#routerStatusResponse","result":{"natStatus":[{"name":"egress-nat","autoAllocatedNatIps":["203.0.113.1"],
				"drainUserAllocatedNatIps":["203.0.113.9"]}]}}`),
		},
		"GET /regions/us-central1/routers/gone/getRouterStatus": {
			{status: http.StatusNotFound, body: errJSON(404, "notFound", "The resource 'projects/p/regions/us-central1/routers/gone' was not found")},
		},
	})
	calls := NewCallCounter()
	c := NewClient(svc, nil, nil, WithCallCounter(calls)).NATs()

	names, err := c.Routers(ctx, "p", "us-central1", "vpc")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"alpha", "egress"}, names); diff != "" {
		t.Errorf("Routers: the routers of network vpc over two pages, -want, +got:\n%s", diff)
	}
	nats, err := c.NATs(ctx, "p", "us-central1", "egress")
	if err != nil {
		t.Fatal(err)
	}
	want := []NAT{{Name: "egress-nat", Active: []netip.Prefix{netip.MustParsePrefix("203.0.113.1/32")},
		Draining: []netip.Prefix{netip.MustParsePrefix("203.0.113.9/32")}}}
	if diff := cmp.Diff(want, nats, samePrefix, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("NATs: -want, +got:\n%s", diff)
	}
	if _, err := c.NATs(ctx, "p", "us-central1", "gone"); !IsNotFound(err) {
		t.Errorf("NATs of a missing router: want NotFound, got %v", err)
	}
	if got := []int64{calls.Count(MethodRouterList), calls.Count(MethodRouterGetStatus)}; !cmp.Equal(got, []int64{2, 2}) {
		t.Errorf("calls: want 2 routers.list pages and 2 getRouterStatus, got %v", got)
	}
	seen, _ := f.log()
	wantSeen := []string{"GET /regions/us-central1/routers?pageToken=", "GET /regions/us-central1/routers?pageToken=t2",
		"GET /regions/us-central1/routers/egress/getRouterStatus", "GET /regions/us-central1/routers/gone/getRouterStatus"}
	if diff := cmp.Diff(wantSeen, seen); diff != "" {
		t.Errorf("requests: -want, +got:\n%s", diff)
	}
}
