package gcp

import (
	"context"
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
)

func TestLabelFilter(t *testing.T) {
	cases := map[string]struct {
		labels  map[string]string
		want    string
		wantErr bool
	}{
		"One":         {labels: map[string]string{"goog-k8s-node-pool-name": "pool-a"}, want: `(labels.goog-k8s-node-pool-name = "pool-a")`},
		"SortedAnded": {labels: map[string]string{"b": "2", "a": "1"}, want: `(labels.a = "1") (labels.b = "2")`},
		"EmptyValue":  {labels: map[string]string{"a": ""}, want: `(labels.a = "")`},
		"None":        {labels: map[string]string{}, wantErr: true},
		"UpperKey":    {labels: map[string]string{"Pool": "a"}, wantErr: true},
		"QuoteValue":  {labels: map[string]string{"a": `x") OR (name = "y`}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := LabelFilter(tc.labels)
			if (err != nil) != tc.wantErr {
				t.Fatalf("LabelFilter: err %v, want error %t", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LabelFilter: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestInstanceOf(t *testing.T) {
	p := netip.MustParsePrefix
	cases := map[string]struct {
		in   *compute.Instance
		want Instance
	}{
		"ExternalAndInternal": {
			in: &compute.Instance{Name: "n1", Zone: "https://www.googleapis.com/compute/v1/projects/p/zones/us-central1-a", Status: "RUNNING",
				Labels: map[string]string{"pool": "a"},
				NetworkInterfaces: []*compute.NetworkInterface{{
					NetworkIP:     "10.0.0.2",
					AccessConfigs: []*compute.AccessConfig{{Type: "ONE_TO_ONE_NAT", NatIP: "203.0.113.7"}},
				}}},
			want: Instance{Name: "n1", Zone: "us-central1-a", Status: "RUNNING", Labels: map[string]string{"pool": "a"},
				External: []netip.Prefix{p("203.0.113.7/32")}, Internal: []netip.Prefix{p("10.0.0.2/32")}},
		},
		"NoAccessConfig": {
			in: &compute.Instance{Name: "n2", Zone: "zones/europe-west1-b", Status: "RUNNING",
				NetworkInterfaces: []*compute.NetworkInterface{{NetworkIP: "10.0.0.3"}}},
			want: Instance{Name: "n2", Zone: "europe-west1-b", Status: "RUNNING", Internal: []netip.Prefix{p("10.0.0.3/32")}},
		},
		"DualStack": {
			in: &compute.Instance{Name: "n3", Zone: "us-east1-b", Status: "RUNNING",
				NetworkInterfaces: []*compute.NetworkInterface{{
					NetworkIP: "10.0.0.4", Ipv6Address: "fd20:1:2:3:0:0:0:0", InternalIpv6PrefixLength: 96,
					AccessConfigs:     []*compute.AccessConfig{{NatIP: "198.51.100.1"}},
					Ipv6AccessConfigs: []*compute.AccessConfig{{ExternalIpv6: "2600:1900:4000:1::", ExternalIpv6PrefixLength: 96}},
				}}},
			want: Instance{Name: "n3", Zone: "us-east1-b", Status: "RUNNING",
				External: []netip.Prefix{p("198.51.100.1/32"), p("2600:1900:4000:1::/96")},
				Internal: []netip.Prefix{p("10.0.0.4/32"), p("fd20:1:2:3::/96")}},
		},
		"Ipv6WithoutLengthIsHost": {
			in: &compute.Instance{Name: "n4", Status: "RUNNING",
				NetworkInterfaces: []*compute.NetworkInterface{{Ipv6Address: "fd20::5"}}},
			want: Instance{Name: "n4", Status: "RUNNING", Internal: []netip.Prefix{p("fd20::5/128")}},
		},
		"TwoInterfaces": {
			in: &compute.Instance{Name: "n5", Status: "RUNNING", NetworkInterfaces: []*compute.NetworkInterface{
				{NetworkIP: "10.0.0.5", AccessConfigs: []*compute.AccessConfig{{NatIP: "192.0.2.5"}}},
				{NetworkIP: "10.1.0.5", AccessConfigs: []*compute.AccessConfig{{NatIP: "192.0.2.6"}}},
			}},
			want: Instance{Name: "n5", Status: "RUNNING", External: []netip.Prefix{p("192.0.2.5/32"), p("192.0.2.6/32")},
				Internal: []netip.Prefix{p("10.0.0.5/32"), p("10.1.0.5/32")}},
		},
		"Invalid": {
			in: &compute.Instance{Name: "n6", Status: "RUNNING", NetworkInterfaces: []*compute.NetworkInterface{
				{NetworkIP: "10.0.0.6", AccessConfigs: []*compute.AccessConfig{{NatIP: "not-an-ip"}}},
			}},
			want: Instance{Name: "n6", Status: "RUNNING", Internal: []netip.Prefix{p("10.0.0.6/32")}, Invalid: []string{`natIP "not-an-ip"`}},
		},
		"Stopped": {
			in:   &compute.Instance{Name: "n7", Status: "TERMINATED", NetworkInterfaces: []*compute.NetworkInterface{{NetworkIP: "10.0.0.7", AccessConfigs: []*compute.AccessConfig{{}}}}},
			want: Instance{Name: "n7", Status: "TERMINATED", Internal: []netip.Prefix{p("10.0.0.7/32")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, InstanceOf(tc.in), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
				t.Errorf("InstanceOf: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestInstancesAdd(t *testing.T) {
	var got Instances
	got.add(&compute.InstanceAggregatedList{
		Unreachables: []string{"zones/asia-east1-a"},
		Items: map[string]compute.InstancesScopedList{
			"zones/us-central1-b": {Instances: []*compute.Instance{{Name: "b", Zone: "us-central1-b"}}},
			"zones/us-central1-a": {Instances: []*compute.Instance{{Name: "z", Zone: "us-central1-a"}, {Name: "a", Zone: "us-central1-a"}}},
			"zones/us-east1-b":    {Warning: &compute.InstancesScopedListWarning{Code: "NO_RESULTS_ON_PAGE"}},
			"zones/us-west1-a":    {Warning: &compute.InstancesScopedListWarning{Code: "UNREACHABLE"}},
		},
	})
	got.add(&compute.InstanceAggregatedList{Unreachables: []string{"zones/asia-east1-a"}})
	got.sort()
	want := Instances{
		Items:       []Instance{{Name: "a", Zone: "us-central1-a"}, {Name: "z", Zone: "us-central1-a"}, {Name: "b", Zone: "us-central1-b"}},
		Unreachable: []string{"zones/asia-east1-a", "zones/us-west1-a"},
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); diff != "" {
		t.Errorf("Instances: -want, +got:\n%s", diff)
	}
}

// TestInstancesList lists the emulator's instances through the official
// client: the label filter ANDs, every page is a call, counted.
func TestInstancesList(t *testing.T) {
	ctx := context.Background()
	c, svc, em := emulatorClient(t, time.Hour)
	insert := func(zone, name string, labels map[string]string) {
		t.Helper()
		i := &compute.Instance{Name: name, MachineType: "e2-small", Labels: labels,
			NetworkInterfaces: []*compute.NetworkInterface{{AccessConfigs: []*compute.AccessConfig{{}}}}}
		if _, err := svc.Instances.Insert("p", zone, i).Do(); err != nil {
			t.Fatal(err)
		}
	}
	// 501 instances: more than a page of 500.
	for n := range 501 {
		insert("us-central1-a", fmt.Sprintf("a-%03d", n), map[string]string{"pool": "a", "env": "prod"})
	}
	insert("us-east1-b", "a-dev", map[string]string{"pool": "a", "env": "dev"})
	insert("us-east1-b", "b", map[string]string{"pool": "b", "env": "prod"})

	got, err := c.Instances().List(ctx, "p", map[string]string{"pool": "a", "env": "prod"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 501 || got.Items[0].Name != "a-000" || got.Items[500].Name != "a-500" || len(got.Unreachable) != 0 {
		t.Errorf("pool=a env=prod: want a-000..a-500, got %d items, unreachable %v", len(got.Items), got.Unreachable)
	}
	if n := c.calls.Count(MethodInstanceAggregatedList); n != 2 || em.Stats().Methods["instances.aggregatedList"] != 2 {
		t.Errorf("501 instances: want 2 pages, 2 calls counted, got %d (emulator %d)", n, em.Stats().Methods["instances.aggregatedList"])
	}
	one := got.Items[0]
	if one.Zone != "us-central1-a" || one.Status != StatusRunning || len(one.External) != 1 || len(one.Internal) != 1 {
		t.Errorf("an instance: want its zone, status and one address of each kind, got %+v", one)
	}
}
