package addresses_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

// scoped lists what an aggregated list holds: "scope/name" per address,
// and how many scopes carry the NO_RESULTS_ON_PAGE warning (-1 if one
// with no addresses does not).
func scoped(l *compute.AddressAggregatedList) (got []string, empty int) {
	for scope, sl := range l.Items {
		if len(sl.Addresses) == 0 {
			if sl.Warning == nil || sl.Warning.Code != "NO_RESULTS_ON_PAGE" ||
				sl.Warning.Message != "There are no results for scope '"+scope+"' on this page." {
				return nil, -1
			}
			empty++
		}
		for _, a := range sl.Addresses {
			got = append(got, strings.TrimPrefix(scope, "regions/")+"/"+a.Name)
		}
	}
	slices.Sort(got)
	return got, empty
}

func TestListAndAggregatedList(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	for _, name := range []string{"b", "a", "c"} {
		reserve(t, svc, &compute.Address{Name: name})
	}
	if _, err := svc.Addresses.Insert(project, "europe-west1", &compute.Address{Name: "e"}).Do(); err != nil {
		t.Fatal(err)
	}
	l, err := svc.Addresses.List(project, region).Do()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, a := range l.Items {
		names = append(names, a.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names); diff != "" || l.Kind != "compute#addressList" ||
		l.SelfLink != root+"projects/p/regions/us-central1/addresses" {
		t.Errorf("list: kind %q, selfLink %q, names -want +got:\n%s", l.Kind, l.SelfLink, diff)
	}
	var paged []string
	pages := 0
	err = svc.Addresses.List(project, region).MaxResults(2).Pages(context.Background(), func(l *compute.AddressList) error {
		pages++
		for _, a := range l.Items {
			paged = append(paged, a.Name)
		}
		return nil
	})
	if err != nil || pages != 2 || !slices.Equal(paged, []string{"a", "b", "c"}) {
		t.Errorf("list, 2 a page: want a, b, c in 2 pages, got %v in %d, %v", paged, pages, err)
	}
	filtered, err := svc.Addresses.List(project, region).Filter(`name = "b"`).Do()
	if err != nil || len(filtered.Items) != 1 || filtered.Items[0].Name != "b" {
		t.Errorf("list filter name = b: got %+v, %v", filtered, err)
	}
	all, err := svc.Addresses.AggregatedList(project).Do()
	if err != nil {
		t.Fatal(err)
	}
	got, empty := scoped(all)
	_, global := all.Items["global"]
	if diff := cmp.Diff([]string{"europe-west1/e", "us-central1/a", "us-central1/b", "us-central1/c"}, got); diff != "" ||
		all.Kind != "compute#addressAggregatedList" || len(all.Items) != 11 || empty != 9 || !global {
		t.Errorf("aggregatedList: want global and every region, the empty ones warned; got %d scopes, %d empty, -want +got:\n%s",
			len(all.Items), empty, diff)
	}
	paged, pages = nil, 0
	err = svc.Addresses.AggregatedList(project).MaxResults(3).Pages(context.Background(), func(l *compute.AddressAggregatedList) error {
		pages++
		n, _ := scoped(l)
		paged = append(paged, n...)
		return nil
	})
	if slices.Sort(paged); err != nil || pages != 2 || len(paged) != 4 {
		t.Errorf("aggregatedList, 3 a page: want 4 addresses in 2 pages, got %v in %d, %v", paged, pages, err)
	}
}

// natUse is what an address says of its use: its status and users.
func natUse(t *testing.T, svc *compute.Service, name string) []string {
	t.Helper()
	a := get(t, svc, name)
	return append([]string{a.Status}, a.Users...)
}

func nat(addresses []string, drain ...string) *compute.RouterNat {
	n := &compute.RouterNat{Name: "nat", NatIpAllocateOption: "MANUAL_ONLY", SourceSubnetworkIpRangesToNat: "LIST_OF_SUBNETWORKS"}
	for _, a := range addresses {
		n.NatIps = append(n.NatIps, "regions/us-central1/addresses/"+a)
	}
	for _, a := range drain {
		n.DrainNatIps = append(n.DrainNatIps, "regions/us-central1/addresses/"+a)
	}
	return n
}

// TestUsedByNAT: an address a NAT names (natIps or drainNatIps) is IN_USE
// with the router among its users, cannot be deleted nor taken by another
// router's NAT, and is RESERVED again once no NAT names it: the address
// left out by a patch, the NATs removed, the router deleted.
func TestUsedByNAT(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	ips := map[string]string{}
	for _, name := range []string{"a", "b"} {
		ips[name] = reserve(t, svc, &compute.Address{Name: name}).Address
	}
	egress := root + "projects/p/regions/us-central1/routers/egress"
	patch := func(r *compute.Router) {
		t.Helper()
		if _, err := svc.Routers.Patch(project, region, "egress", r).Do(); err != nil {
			t.Fatalf("patch: %v", err)
		}
	}
	steps := []struct {
		step   string
		change func()
		a, b   []string // natUse of a and b after the change
	}{
		{"router inserted", func() {
			if _, err := svc.Routers.Insert(project, region, &compute.Router{Name: "egress", Network: "global/networks/default",
				Nats: []*compute.RouterNat{nat([]string{"a"})}}).Do(); err != nil {
				t.Fatal(err)
			}
		}, []string{"IN_USE", egress}, []string{"RESERVED"}},
		{"a draining, b in use", func() { patch(&compute.Router{Nats: []*compute.RouterNat{nat([]string{"b"}, "a")}}) },
			[]string{"IN_USE", egress}, []string{"IN_USE", egress}},
		{"a left out", func() { patch(&compute.Router{Nats: []*compute.RouterNat{nat([]string{"b"})}}) },
			[]string{"RESERVED"}, []string{"IN_USE", egress}},
		{"NATs removed", func() { patch(&compute.Router{NullFields: []string{"Nats"}}) },
			[]string{"RESERVED"}, []string{"RESERVED"}},
		{"a in use again", func() { patch(&compute.Router{Nats: []*compute.RouterNat{nat([]string{"a", "b"})}}) },
			[]string{"IN_USE", egress}, []string{"IN_USE", egress}},
	}
	for _, s := range steps {
		s.change()
		if diff := cmp.Diff([][]string{s.a, s.b}, [][]string{natUse(t, svc, "a"), natUse(t, svc, "b")}); diff != "" {
			t.Errorf("%s: status and users of a and b, -want +got:\n%s", s.step, diff)
		}
	}
	st, err := svc.Routers.GetRouterStatus(project, region, "egress").Do()
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{ips["a"], ips["b"]}, st.Result.NatStatus[0].UserAllocatedNatIps); diff != "" {
		t.Errorf("userAllocatedNatIps are the addresses' address fields: -want +got:\n%s", diff)
	}

	inUse := []any{400, "resourceInUseByAnotherResource",
		"The address resource 'projects/p/regions/us-central1/addresses/a' is already being used by 'projects/p/regions/us-central1/routers/egress'"}
	_, err = svc.Addresses.Delete(project, region, "a").Do()
	if diff := cmp.Diff(inUse, apiError(t, err)); diff != "" {
		t.Errorf("delete while a NAT uses it: -want, +got:\n%s", diff)
	}
	_, err = svc.Routers.Insert(project, region, &compute.Router{Name: "other", Network: "global/networks/other",
		Nats: []*compute.RouterNat{nat([]string{"a"})}}).Do()
	if diff := cmp.Diff(inUse, apiError(t, err)); diff != "" {
		t.Errorf("another router's NAT naming it: -want, +got:\n%s", diff)
	}

	if _, err := svc.Routers.Delete(project, region, "egress").Do(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([][]string{{"RESERVED"}, {"RESERVED"}}, [][]string{natUse(t, svc, "a"), natUse(t, svc, "b")}); diff != "" {
		t.Errorf("router deleted: -want +got:\n%s", diff)
	}
	if _, err := svc.Addresses.Delete(project, region, "a").Do(); err != nil {
		t.Errorf("delete once no NAT uses it: %v", err)
	}
}

// TestGrantsAndWriteParameters: addresses go through the server's
// pipeline: a token without a write grant gets compute's 403 naming the
// address or the region; a retried insert (same requestId) gets its first
// operation; validateOnly, which no address method has, is refused.
func TestGrantsAndWriteParameters(t *testing.T) {
	em := emulator.Start(t, emulator.Options{Grants: map[string]emulator.Grant{"reader": {Read: []string{"p"}}, "admin": {Write: []string{"p"}}}})
	admin, _ := em.NewServiceWithToken(context.Background(), "admin")
	reader, _ := em.NewServiceWithToken(context.Background(), "reader")
	first, err := admin.Addresses.Insert(project, region, &compute.Address{Name: "a"}).RequestId("req-1").Do()
	if err != nil {
		t.Fatal(err)
	}
	again, err := admin.Addresses.Insert(project, region, &compute.Address{Name: "a"}).RequestId("req-1").Do()
	if err != nil || again.Name != first.Name {
		t.Errorf("retried insert: want operation %s, got %+v, %v", first.Name, again, err)
	}
	cases := map[string]struct {
		call func() error
		want []any
	}{
		"Insert": {func() error {
			_, err := reader.Addresses.Insert(project, region, &compute.Address{Name: "x"}).Do()
			return err
		},
			[]any{403, "forbidden", "Required 'compute.addresses.create' permission for 'projects/p/regions/us-central1'"}},
		"Delete": {func() error { _, err := reader.Addresses.Delete(project, region, "a").Do(); return err },
			[]any{403, "forbidden", "Required 'compute.addresses.delete' permission for 'projects/p/regions/us-central1/addresses/a'"}},
		"OtherProject": {func() error { _, err := reader.Addresses.Get("q", region, "a").Do(); return err },
			[]any{403, "forbidden", "Required 'compute.addresses.get' permission for 'projects/q/regions/us-central1/addresses/a'"}},
		"AggregatedOther": {func() error { _, err := reader.Addresses.AggregatedList("q").Do(); return err },
			[]any{403, "forbidden", "Required 'compute.addresses.list' permission for 'projects/q'"}},
		"ValidateOnly": {func() error {
			_, err := admin.Addresses.Insert(project, region, &compute.Address{Name: "dry"}).Do(googleapi.QueryParameter("validateOnly", "true"))
			return err
		}, []any{400, "invalid", `Invalid JSON payload received. Unknown name "validateOnly": Cannot bind query parameter. ` +
			`Field 'validateOnly' could not be found in request message.`}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, apiError(t, tc.call())); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
		})
	}
	if _, err := reader.Addresses.Get(project, region, "a").Do(); err != nil {
		t.Errorf("get with a read grant: %v", err)
	}
	a, err := reader.Addresses.Get(project, region, "a").Fields("address,status").Do()
	if err != nil || a.Address == "" || a.Status != "RESERVED" || a.Name != "" {
		t.Errorf("get fields=address,status: got %+v, %v", a, err)
	}
}

// TestBusyWhileRunning: an address whose insert runs refuses a delete, as
// every compute object does.
func TestBusyWhileRunning(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{OpLatency: 10 * time.Second})
	reserve(t, svc, &compute.Address{Name: "a"})
	_, err := svc.Addresses.Delete(project, region, "a").Do()
	if diff := cmp.Diff([]any{400, "resourceNotReady", "The resource 'projects/p/regions/us-central1/addresses/a' is not ready"}, apiError(t, err)); diff != "" {
		t.Errorf("delete while the insert runs: -want, +got:\n%s", diff)
	}
}
