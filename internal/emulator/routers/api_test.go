package routers_test

import (
	"context"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

// scoped lists what an aggregated list holds: "region/name" per router,
// and how many scopes carry the NO_RESULTS_ON_PAGE warning (-1 if one
// with no routers does not).
func scoped(l *compute.RouterAggregatedList) (got []string, empty int) {
	for scope, sl := range l.Items {
		if len(sl.Routers) == 0 {
			if sl.Warning == nil || sl.Warning.Code != "NO_RESULTS_ON_PAGE" ||
				sl.Warning.Message != "There are no results for scope '"+scope+"' on this page." {
				return nil, -1
			}
			empty++
		}
		for _, r := range sl.Routers {
			got = append(got, strings.TrimPrefix(scope, "regions/")+"/"+r.Name)
		}
	}
	slices.Sort(got)
	return got, empty
}

func TestListAndAggregatedList(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	for _, name := range []string{"b", "a", "c"} {
		insert(t, svc, rtr(name))
	}
	if _, err := svc.Routers.Insert(project, "europe-west1", rtr("e")).Do(); err != nil {
		t.Fatal(err)
	}
	l, err := svc.Routers.List(project, region).Do()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, r := range l.Items {
		names = append(names, r.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, names); diff != "" || l.Kind != "compute#routerList" {
		t.Errorf("list: kind %q, names -want +got:\n%s", l.Kind, diff)
	}
	all, err := svc.Routers.AggregatedList(project).Do()
	if err != nil {
		t.Fatal(err)
	}
	got, empty := scoped(all)
	if diff := cmp.Diff([]string{"europe-west1/e", "us-central1/a", "us-central1/b", "us-central1/c"}, got); diff != "" ||
		all.Kind != "compute#routerAggregatedList" || len(all.Items) != 10 || empty != 8 {
		t.Errorf("aggregatedList: want every region, the empty ones warned; got %d scopes, %d empty, -want +got:\n%s", len(all.Items), empty, diff)
	}
	filtered, err := svc.Routers.AggregatedList(project).Filter(`name = "b"`).Do()
	if got, _ := scoped(filtered); err != nil || !slices.Equal(got, []string{"us-central1/b"}) {
		t.Errorf("aggregatedList filter name = b: got %v, %v", got, err)
	}
	var paged []string
	pages := 0
	err = svc.Routers.AggregatedList(project).MaxResults(3).Pages(context.Background(), func(l *compute.RouterAggregatedList) error {
		pages++
		n, _ := scoped(l)
		paged = append(paged, n...)
		return nil
	})
	if slices.Sort(paged); err != nil || pages != 2 || len(paged) != 4 {
		t.Errorf("aggregatedList, 3 a page: want 4 routers in 2 pages, got %v in %d, %v", paged, pages, err)
	}
	_, err = svc.Routers.List(project, "mars-north1").Do()
	if diff := cmp.Diff([]any{400, "invalid", "Invalid value for field 'region': 'mars-north1'. Unknown region."}, apiError(t, err)); diff != "" {
		t.Errorf("list of an unknown region: -want, +got:\n%s", diff)
	}
}

// TestFields: fields= selects parts of a router, its status and its NAT
// addresses, and refuses a field their types do not have.
func TestFields(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	insert(t, svc, rtr("egress", autoNAT("nat")))
	r, err := svc.Routers.Get(project, region, "egress").Fields("name,nats(name)").Do()
	if err != nil || r.Name != "egress" || r.Network != "" || len(r.Nats) != 1 || r.Nats[0].Name != "nat" || r.Nats[0].NatIpAllocateOption != "" {
		t.Errorf("get fields=name,nats(name): got %+v, %v", r, err)
	}
	s, err := svc.Routers.GetRouterStatus(project, region, "egress").Fields("result(natStatus(autoAllocatedNatIps))").Do()
	if err != nil || s.Kind != "" || s.Result.Network != "" || !slices.Equal(s.Result.NatStatus[0].AutoAllocatedNatIps, []string{"34.127.0.1"}) ||
		s.Result.NatStatus[0].Name != "" {
		t.Errorf("getRouterStatus fields=result(natStatus(autoAllocatedNatIps)): got %+v, %v", s, err)
	}
	info, err := svc.Routers.GetNatIpInfo(project, region, "egress").Fields("result(natIpInfoMappings(natIp))").Do()
	if err != nil || info.Result[0].NatName != "" || info.Result[0].NatIpInfoMappings[0].NatIp != "34.127.0.1" || info.Result[0].NatIpInfoMappings[0].Usage != "" {
		t.Errorf("getNatIpInfo fields=result(natIpInfoMappings(natIp)): got %+v, %v", info, err)
	}
	l, err := svc.Routers.AggregatedList(project).Fields("items/*/routers(name)").Do()
	if got, _ := scoped(l); err != nil || !slices.Equal(got, []string{"us-central1/egress"}) {
		t.Errorf("aggregatedList fields=items/*/routers(name): got %v, %v", got, err)
	}
	_, err = svc.Routers.GetRouterStatus(project, region, "egress").Fields("result(bogus)").Do()
	if code := apiError(t, err)[0]; code != 400 {
		t.Errorf("a field RouterStatusResponse lacks: want 400, got %v", code)
	}
}

// TestGrantsAndFaults: routers go through the server's pipeline: a token
// without a write grant gets compute's 403 naming the router or the
// region, and a fault injected for getRouterStatus makes it unreadable.
func TestGrantsAndFaults(t *testing.T) {
	em := emulator.Start(t, emulator.Options{Grants: map[string]emulator.Grant{"reader": {Read: []string{"p"}}, "admin": {Write: []string{"p"}}}})
	admin, _ := em.NewServiceWithToken(context.Background(), "admin")
	reader, _ := em.NewServiceWithToken(context.Background(), "reader")
	insert(t, admin, rtr("egress", autoNAT("nat")))
	if _, err := reader.Routers.GetRouterStatus(project, region, "egress").Do(); err != nil {
		t.Errorf("getRouterStatus with a read grant: %v", err)
	}
	cases := map[string]struct {
		call func() error
		want []any
	}{
		"Insert": {func() error { _, err := reader.Routers.Insert(project, region, rtr("x")).Do(); return err },
			[]any{403, "forbidden", "Required 'compute.routers.create' permission for 'projects/p/regions/us-central1'"}},
		"Patch": {func() error {
			_, err := reader.Routers.Patch(project, region, "egress", &compute.Router{}).Do()
			return err
		},
			[]any{403, "forbidden", "Required 'compute.routers.update' permission for 'projects/p/regions/us-central1/routers/egress'"}},
		"Delete": {func() error { _, err := reader.Routers.Delete(project, region, "egress").Do(); return err },
			[]any{403, "forbidden", "Required 'compute.routers.delete' permission for 'projects/p/regions/us-central1/routers/egress'"}},
		"OtherProject": {func() error { _, err := reader.Routers.GetNatIpInfo("q", region, "egress").Do(); return err },
			[]any{403, "forbidden", "Required 'compute.routers.get' permission for 'projects/q/regions/us-central1/routers/egress'"}},
		"AggregatedOther": {func() error { _, err := reader.Routers.AggregatedList("q").Do(); return err },
			[]any{403, "forbidden", "Required 'compute.routers.list' permission for 'projects/q'"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, apiError(t, tc.call())); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
		})
	}
	if err := em.SetFaults(emulator.Faults{Methods: map[string]emulator.FaultRule{"routers.getRouterStatus": {ErrorRate: 1, ErrorCodes: []int{503}}}}); err != nil {
		t.Fatal(err)
	}
	_, err := admin.Routers.GetRouterStatus(project, region, "egress").Do()
	if diff := cmp.Diff([]any{503, "backendError", "The service is currently unavailable."}, apiError(t, err)); diff != "" {
		t.Errorf("getRouterStatus with a fault: -want, +got:\n%s", diff)
	}
	if _, err := admin.Routers.Get(project, region, "egress").Do(); err != nil {
		t.Errorf("get beside a getRouterStatus fault: %v", err)
	}
}

// TestBusyWhileRunning: a router whose operation runs refuses another
// write, as every compute object does.
func TestBusyWhileRunning(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{OpLatency: 10 * time.Second})
	insert(t, svc, rtr("egress"))
	_, err := svc.Routers.Patch(project, region, "egress", &compute.Router{Description: "x"}).Do()
	if diff := cmp.Diff([]any{400, "resourceNotReady", "The resource 'projects/p/regions/us-central1/routers/egress' is not ready"}, apiError(t, err)); diff != "" {
		t.Errorf("patch while the insert runs: -want, +got:\n%s", diff)
	}
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

// TestDebugEndpoints: the knobs as make run and shell scripts use them,
// and Reset, which forgets routers and restarts the pool.
func TestDebugEndpoints(t *testing.T) {
	svc, em := emulator.StartService(t, emulator.Options{})
	base := em.URL() + "/_emulator/routers"
	code, body := post(t, base, `{"project":"p","region":"us-central1","needs":{"nat":2},
		"router":{"name":"egress","network":"global/networks/default","nats":[{"name":"nat","natIpAllocateOption":"AUTO_ONLY"}]}}`)
	if code != 200 || !strings.Contains(body, `"selfLink":"`+root+`projects/p/regions/us-central1/routers/egress"`) {
		t.Fatalf("seed: %d %s", code, body)
	}
	nat := base + "/p/us-central1/egress/nats/nat/"
	steps := []struct{ action, body, want string }{
		{"allocate", "", `{"autoAllocatedNatIps":["34.127.0.1","34.127.0.2","34.127.0.3"],"name":"nat","numVmEndpointsWithNatMappings":1}`},
		{"release", `{"natIp":"34.127.0.2"}`, `{"autoAllocatedNatIps":["34.127.0.1","34.127.0.3"],"drainAutoAllocatedNatIps":["34.127.0.2"],"name":"nat","numVmEndpointsWithNatMappings":1}`},
		{"release", "", `{"autoAllocatedNatIps":["34.127.0.1"],"drainAutoAllocatedNatIps":["34.127.0.2","34.127.0.3"],"name":"nat","numVmEndpointsWithNatMappings":1}`},
		{"finishDrain", "", `{"autoAllocatedNatIps":["34.127.0.1"],"name":"nat","numVmEndpointsWithNatMappings":1}`},
		{"needs", `{"vms":1500}`, `{"autoAllocatedNatIps":["34.127.0.1","34.127.0.4"],"name":"nat","numVmEndpointsWithNatMappings":1500}`},
	}
	for _, s := range steps {
		if code, got := post(t, nat+s.action, s.body); code != 200 || got != s.want {
			t.Errorf("%s %s: want 200 %s, got %d %s", s.action, s.body, s.want, code, got)
		}
	}
	if code, got := post(t, base+"/p/us-central1/egress/nats/none/allocate", ""); code != 404 ||
		!strings.Contains(got, "The resource 'projects/p/regions/us-central1/routers/egress/nats/none' was not found") {
		t.Errorf("a NAT the router lacks: want 404, got %d %s", code, got)
	}
	if code, _ := post(t, nat+"needs", `{"bogus":1}`); code != 400 {
		t.Errorf("needs with an unknown field: want 400, got %d", code)
	}
	em.Reset()
	if _, err := svc.Routers.Get(project, region, "egress").Do(); apiError(t, err)[0] != 404 {
		t.Errorf("after Reset: want 404, got %v", err)
	}
	insert(t, svc, rtr("again", autoNAT("nat")))
	if s := status(t, svc, "again"); !slices.Equal(s[0].AutoAllocatedNatIps, []string{"34.127.0.1"}) {
		t.Errorf("after Reset the pool starts again: got %v", s[0].AutoAllocatedNatIps)
	}
}

func TestReadsRefused(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	cases := map[string]struct {
		call func() error
		want []any
	}{
		"GetUnknownRegion": {func() error { _, err := svc.Routers.Get(project, "mars-north1", "r").Do(); return err },
			[]any{400, "invalid", "Invalid value for field 'region': 'mars-north1'. Unknown region."}},
		"StatusNotFound": {func() error { _, err := svc.Routers.GetRouterStatus(project, region, "r").Do(); return err },
			[]any{404, "notFound", "The resource 'projects/p/regions/us-central1/routers/r' was not found"}},
		"NatIPInfoNotFound": {func() error { _, err := svc.Routers.GetNatIpInfo(project, region, "r").Do(); return err },
			[]any{404, "notFound", "The resource 'projects/p/regions/us-central1/routers/r' was not found"}},
		"BadNatName": {func() error {
			_, err := svc.Routers.GetNatIpInfo(project, region, "r").NatName("Bad_Name").Do()
			return err
		},
			[]any{400, "invalid", "Invalid value for field 'natName': 'Bad_Name'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"}},
		"DeleteUnknownRegion": {func() error { _, err := svc.Routers.Delete(project, "mars-north1", "r").Do(); return err },
			[]any{400, "invalid", "Invalid value for field 'region': 'mars-north1'. Unknown region."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, apiError(t, tc.call())); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
		})
	}
}

// TestWriteParameters: a retried insert (same requestId) gets its first
// operation; validateOnly, which no router method has, is refused rather
// than ignored, so no client believing in a dry run gets a write.
func TestWriteParameters(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	first, err := svc.Routers.Insert(project, region, rtr("egress")).RequestId("req-1").Do()
	if err != nil {
		t.Fatal(err)
	}
	again, err := svc.Routers.Insert(project, region, rtr("egress")).RequestId("req-1").Do()
	if err != nil || again.Name != first.Name {
		t.Errorf("retried insert: want operation %s, got %+v, %v", first.Name, again, err)
	}
	_, err = svc.Routers.Insert(project, region, rtr("dry")).Do(googleapi.QueryParameter("validateOnly", "true"))
	want := []any{400, "invalid", `Invalid JSON payload received. Unknown name "validateOnly": Cannot bind query parameter. ` +
		`Field 'validateOnly' could not be found in request message.`}
	if diff := cmp.Diff(want, apiError(t, err)); diff != "" {
		t.Errorf("insert with validateOnly: -want, +got:\n%s", diff)
	}
	if _, err := svc.Routers.Get(project, region, "dry").Do(); apiError(t, err)[0] != 404 {
		t.Errorf("the refused dry run made a router")
	}
}
