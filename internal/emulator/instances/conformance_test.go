package instances_test

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

const project = "p"

// vm is an insert body: one interface with an ephemeral external address.
func vm(name string, labels map[string]string) *compute.Instance {
	return &compute.Instance{Name: name, MachineType: "zones/us-central1-a/machineTypes/e2-small", Labels: labels,
		NetworkInterfaces: []*compute.NetworkInterface{{AccessConfigs: []*compute.AccessConfig{{Type: "ONE_TO_ONE_NAT"}}}}}
}

func insert(t *testing.T, svc *compute.Service, zone string, i *compute.Instance) *compute.Operation {
	t.Helper()
	op, err := svc.Instances.Insert(project, zone, i).Do()
	if err != nil {
		t.Fatalf("insert %s: %v", i.Name, err)
	}
	return op
}

// apiError is the googleapi error of err: its code, reason and message.
func apiError(t *testing.T, err error) (int, string, string) {
	t.Helper()
	var ge *googleapi.Error
	if !errors.As(err, &ge) {
		t.Fatalf("want a googleapi error, got %v", err)
	}
	reason := ""
	if len(ge.Errors) > 0 {
		reason = ge.Errors[0].Reason
	}
	return ge.Code, reason, ge.Message
}

func TestInsertGetDelete(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	op := insert(t, svc, "us-central1-a", vm("node-1", map[string]string{"pool": "a"}))
	if op.Kind != "compute#operation" || op.OperationType != "insert" || !strings.HasSuffix(op.Zone, "/projects/p/zones/us-central1-a") ||
		!strings.HasSuffix(op.TargetLink, "/projects/p/zones/us-central1-a/instances/node-1") {
		t.Errorf("insert: want a zonal insert operation on the instance, got %+v", op)
	}
	done, err := svc.ZoneOperations.Wait(project, "us-central1-a", op.Name).Do()
	if err != nil || done.Status != "DONE" {
		t.Fatalf("zoneOperations.wait: want DONE, got %+v, %v", done, err)
	}
	got, err := svc.Instances.Get(project, "us-central1-a", "node-1").Do()
	if err != nil {
		t.Fatal(err)
	}
	nic := got.NetworkInterfaces[0]
	if got.Status != "RUNNING" || got.Labels["pool"] != "a" || got.LabelFingerprint == "" ||
		!strings.HasPrefix(nic.NetworkIP, "10.128.") || len(nic.AccessConfigs) != 1 || !strings.HasPrefix(nic.AccessConfigs[0].NatIP, "34.") ||
		nic.AccessConfigs[0].Type != "ONE_TO_ONE_NAT" || !strings.HasSuffix(got.Zone, "/zones/us-central1-a") {
		t.Errorf("get: want a RUNNING instance with its labels, a networkIP and an ephemeral natIP, got %+v, %+v", got, nic)
	}

	if _, err := svc.Instances.Delete(project, "us-central1-a", "node-1").Do(); err != nil {
		t.Fatal(err)
	}
	_, err = svc.Instances.Get(project, "us-central1-a", "node-1").Do()
	code, reason, msg := apiError(t, err)
	if diff := cmp.Diff([]any{404, "notFound", "The resource 'projects/p/zones/us-central1-a/instances/node-1' was not found"}, []any{code, reason, msg}); diff != "" {
		t.Errorf("get after delete: -want, +got:\n%s", diff)
	}
}

func TestInsertRefused(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	insert(t, svc, "us-central1-a", vm("taken", nil))
	noMachine := vm("m", nil)
	noMachine.MachineType = ""
	cases := map[string]struct {
		zone string
		body *compute.Instance
		want []any
	}{
		"BadName": {"us-central1-a", vm("Node_1", nil), []any{400, "invalid",
			"Invalid value for field 'resource.name': 'Node_1'. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"}},
		"UnknownZone": {"us-central1-z", vm("n", nil), []any{400, "invalid", "Invalid value for field 'zone': 'us-central1-z'. Unknown zone."}},
		"Duplicate":   {"us-central1-a", vm("taken", nil), []any{409, "alreadyExists", "The resource 'projects/p/zones/us-central1-a/instances/taken' already exists"}},
		"NoMachine":   {"us-central1-a", noMachine, []any{400, "required", "Required field 'resource.machineType' not specified"}},
		"BadLabel": {"us-central1-a", vm("l", map[string]string{"Pool": "a"}), []any{400, "invalid",
			"Invalid value for field 'labels.Pool': 'Pool'. Label keys must start with a lowercase letter and contain only lowercase letters, digits, '_' and '-'."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := svc.Instances.Insert(project, tc.zone, tc.body).Do()
			code, reason, msg := apiError(t, err)
			if diff := cmp.Diff(tc.want, []any{code, reason, msg}); diff != "" {
				t.Errorf("insert: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestSetLabelsFingerprint(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	insert(t, svc, "us-east1-b", vm("n", map[string]string{"pool": "a"}))
	before, _ := svc.Instances.Get(project, "us-east1-b", "n").Do()

	for _, fp := range []string{"", "c3RhbGU="} {
		_, err := svc.Instances.SetLabels(project, "us-east1-b", "n", &compute.InstancesSetLabelsRequest{
			Labels: map[string]string{"pool": "b"}, LabelFingerprint: fp}).Do()
		code, reason, msg := apiError(t, err)
		if diff := cmp.Diff([]any{412, "conditionNotMet", "Labels fingerprint either invalid or resource labels have changed"}, []any{code, reason, msg}); diff != "" {
			t.Errorf("setLabels with fingerprint %q: -want, +got:\n%s", fp, diff)
		}
	}
	op, err := svc.Instances.SetLabels(project, "us-east1-b", "n", &compute.InstancesSetLabelsRequest{
		Labels: map[string]string{"pool": "b"}, LabelFingerprint: before.LabelFingerprint}).Do()
	if err != nil || op.OperationType != "setLabels" {
		t.Fatalf("setLabels with the current fingerprint: %+v, %v", op, err)
	}
	after, _ := svc.Instances.Get(project, "us-east1-b", "n").Do()
	if diff := cmp.Diff(map[string]string{"pool": "b"}, after.Labels); diff != "" || after.LabelFingerprint == before.LabelFingerprint {
		t.Errorf("after setLabels: labels -want, +got:\n%s; fingerprint %q (was %q)", diff, after.LabelFingerprint, before.LabelFingerprint)
	}
}

func TestStopStart(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	insert(t, svc, "us-central1-a", vm("n", nil))
	first, _ := svc.Instances.Get(project, "us-central1-a", "n").Do()
	if _, err := svc.Instances.Stop(project, "us-central1-a", "n").Do(); err != nil {
		t.Fatal(err)
	}
	stopped, _ := svc.Instances.Get(project, "us-central1-a", "n").Do()
	if stopped.Status != "TERMINATED" || stopped.NetworkInterfaces[0].AccessConfigs[0].NatIP != "" {
		t.Errorf("stopped: want TERMINATED without its ephemeral natIP, got %s %+v", stopped.Status, stopped.NetworkInterfaces[0].AccessConfigs[0])
	}
	if _, err := svc.Instances.Start(project, "us-central1-a", "n").Do(); err != nil {
		t.Fatal(err)
	}
	started, _ := svc.Instances.Get(project, "us-central1-a", "n").Do()
	ip := started.NetworkInterfaces[0].AccessConfigs[0].NatIP
	if started.Status != "RUNNING" || ip == "" || ip == first.NetworkInterfaces[0].AccessConfigs[0].NatIP {
		t.Errorf("started: want RUNNING with a new ephemeral natIP, got %s %q (first %q)", started.Status, ip, first.NetworkInterfaces[0].AccessConfigs[0].NatIP)
	}
}

// names lists what an aggregated list holds: "zone/name" per instance, and
// the scopes that carry the NO_RESULTS_ON_PAGE warning.
func names(l *compute.InstanceAggregatedList) (got []string, empty int) {
	for scope, sl := range l.Items {
		if sl.Warning != nil {
			if sl.Warning.Code != "NO_RESULTS_ON_PAGE" || len(sl.Instances) > 0 ||
				sl.Warning.Message != "There are no results for scope '"+scope+"' on this page." {
				return nil, -1
			}
			empty++
		}
		for _, i := range sl.Instances {
			got = append(got, strings.TrimPrefix(scope, "zones/")+"/"+i.Name)
		}
	}
	return got, empty
}

func TestAggregatedList(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	insert(t, svc, "us-central1-a", vm("a1", map[string]string{"pool": "a", "env": "prod"}))
	insert(t, svc, "us-central1-b", vm("a2", map[string]string{"pool": "a", "env": "dev"}))
	insert(t, svc, "europe-west1-b", vm("b1", map[string]string{"pool": "b", "env": "prod"}))
	insert(t, svc, "us-central1-a", vm("x", nil))
	_, _ = svc.Instances.Stop(project, "us-central1-b", "a2").Do()

	all, err := svc.Instances.AggregatedList(project).Do()
	if err != nil {
		t.Fatal(err)
	}
	if _, empty := names(all); all.Kind != "compute#instanceAggregatedList" || len(all.Items) < 20 || empty != len(all.Items)-3 {
		t.Errorf("aggregatedList: want every zone, the empty ones with NO_RESULTS_ON_PAGE, got %d scopes, %d empty", len(all.Items), empty)
	}
	cases := map[string]struct {
		filter string
		want   []string
	}{
		"OneLabel":      {`labels.pool = "a"`, []string{"us-central1-a/a1", "us-central1-b/a2"}},
		"TwoLabelsAnd":  {`(labels.pool = "a") (labels.env = "prod")`, []string{"us-central1-a/a1"}},
		"ExplicitAnd":   {`(labels.pool = "a") AND (labels.env = "dev")`, []string{"us-central1-b/a2"}},
		"NotEqual":      {`(labels.env != "prod") (labels.pool = "a")`, []string{"us-central1-b/a2"}},
		"Status":        {`status = RUNNING`, []string{"europe-west1-b/b1", "us-central1-a/a1", "us-central1-a/x"}},
		"Regex":         {`labels.pool eq "[ab]"`, []string{"europe-west1-b/b1", "us-central1-a/a1", "us-central1-b/a2"}},
		"NoneMatches":   {`labels.pool = "c"`, nil},
		"MissingLabel":  {`labels.team = "x"`, nil},
		"RunningPoolA":  {`(labels.pool = "a") (status = "RUNNING")`, []string{"us-central1-a/a1"}},
		"UnsetIsEmpty":  {`labels.pool = ""`, []string{"us-central1-a/x"}},
		"QuotedEscapes": {`labels.pool = "\x61"`, []string{"us-central1-a/a1", "us-central1-b/a2"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			l, err := svc.Instances.AggregatedList(project).Filter(tc.filter).Do()
			if err != nil {
				t.Fatal(err)
			}
			got, empty := names(l)
			if empty < 0 {
				t.Fatal("a scope without instances lacks the NO_RESULTS_ON_PAGE warning")
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("filter %s: -want, +got:\n%s", tc.filter, diff)
			}
		})
	}
}

func TestAggregatedListPages(t *testing.T) {
	svc, em := emulator.StartService(t, emulator.Options{})
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		insert(t, svc, "us-central1-a", vm(n, map[string]string{"pool": "a"}))
	}
	var got []string
	pages := 0
	err := svc.Instances.AggregatedList(project).Filter(`labels.pool = "a"`).MaxResults(2).Pages(context.Background(), func(l *compute.InstanceAggregatedList) error {
		pages++
		n, _ := names(l)
		got = append(got, n...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"us-central1-a/a", "us-central1-a/b", "us-central1-a/c", "us-central1-a/d", "us-central1-a/e"}, got); diff != "" || pages != 3 {
		t.Errorf("5 instances, 2 a page: want 3 pages in order, got %d pages, -want +got:\n%s", pages, diff)
	}
	if n := em.Stats().Methods["instances.aggregatedList"]; n != 3 {
		t.Errorf("want 3 aggregatedList calls counted, got %d", n)
	}
}

func TestListRefused(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	cases := map[string]struct {
		call func() error
		want []any
	}{
		"BadFilter": {func() error {
			_, err := svc.Instances.AggregatedList(project).Filter(`labels.pool = `).Do()
			return err
		},
			[]any{400, "invalid", "Invalid value for field 'filter': 'labels.pool = '. Invalid list filter expression."}},
		"Unbalanced": {func() error {
			_, err := svc.Instances.AggregatedList(project).Filter(`(labels.pool = "a"`).Do()
			return err
		},
			[]any{400, "invalid", `Invalid value for field 'filter': '(labels.pool = "a"'. Invalid list filter expression.`}},
		"Mixed": {func() error {
			_, err := svc.Instances.AggregatedList(project).Filter(`(labels.pool = "a") (name eq "x.*")`).Do()
			return err
		}, []any{400, "invalid", `Invalid value for field 'filter': '(labels.pool = "a") (name eq "x.*")'. Invalid list filter expression.`}},
		"MaxResults": {func() error { _, err := svc.Instances.AggregatedList(project).MaxResults(501).Do(); return err },
			[]any{400, "invalid", "Invalid value for field 'maxResults': '501'. Must be between 0 and 500."}},
		"ListUnknownZone": {func() error { _, err := svc.Instances.List(project, "mars-north1-a").Do(); return err },
			[]any{400, "invalid", "Invalid value for field 'zone': 'mars-north1-a'. Unknown zone."}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			code, reason, msg := apiError(t, tc.call())
			if diff := cmp.Diff(tc.want, []any{code, reason, msg}); diff != "" {
				t.Errorf("-want, +got:\n%s", diff)
			}
		})
	}
}

func TestList(t *testing.T) {
	svc, _ := emulator.StartService(t, emulator.Options{})
	insert(t, svc, "us-central1-a", vm("a", nil))
	insert(t, svc, "us-central1-b", vm("b", nil))
	l, err := svc.Instances.List(project, "us-central1-a").Do()
	if err != nil || len(l.Items) != 1 || l.Items[0].Name != "a" || l.Kind != "compute#instanceList" {
		t.Errorf("list of us-central1-a: want a alone, got %+v, %v", l, err)
	}
	empty, err := svc.Instances.List(project, "us-east1-b").Do()
	if err != nil || len(empty.Items) != 0 {
		t.Errorf("list of an empty zone: want no items, got %+v, %v", empty, err)
	}
}

// TestGrantsAndFaults: instances go through the server's pipeline: a
// token without a grant for the project gets compute's 403, and injected
// faults answer the method as configured.
func TestGrantsAndFaults(t *testing.T) {
	em := emulator.Start(t, emulator.Options{Auth: emulator.AuthAny,
		Grants: map[string]emulator.Grant{"mine": {Read: []string{"p"}}}})
	mine, _ := em.NewServiceWithToken(context.Background(), "mine")
	if _, err := mine.Instances.AggregatedList("p").Do(); err != nil {
		t.Fatalf("granted project: %v", err)
	}
	_, err := mine.Instances.AggregatedList("other").Do()
	code, reason, msg := apiError(t, err)
	if diff := cmp.Diff([]any{403, "forbidden", "Required 'compute.instances.list' permission for 'projects/other'"}, []any{code, reason, msg}); diff != "" {
		t.Errorf("ungranted project: -want, +got:\n%s", diff)
	}
	_, err = mine.Instances.Insert("p", "us-central1-a", vm("n", nil)).Do()
	code, _, msg = apiError(t, err)
	if code != http.StatusForbidden || msg != "Required 'compute.instances.create' permission for 'projects/p/zones/us-central1-a'" {
		t.Errorf("insert with a read grant: want 403 for compute.instances.create, got %d %s", code, msg)
	}

	if err := em.SetFaults(emulator.Faults{Methods: map[string]emulator.FaultRule{"instances.aggregatedList": {ErrorRate: 1, ErrorCodes: []int{503}}}}); err != nil {
		t.Fatal(err)
	}
	_, err = mine.Instances.AggregatedList("p").Do()
	if code, _, _ := apiError(t, err); code != 503 {
		t.Errorf("with a fault: want 503, got %d", code)
	}
}

// TestUnreachableZones: with returnPartialSuccess a zone that cannot be
// read is named in unreachables and its instances are left out; without it
// the whole list fails.
func TestUnreachableZones(t *testing.T) {
	svc, em := emulator.StartService(t, emulator.Options{})
	insert(t, svc, "us-central1-a", vm("a", nil))
	insert(t, svc, "us-central1-b", vm("b", nil))
	em.SetUnreachableZones("us-central1-a")

	l, err := svc.Instances.AggregatedList(project).Do(googleapi.QueryParameter("returnPartialSuccess", "true"))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := names(l)
	if _, listed := l.Items["zones/us-central1-a"]; listed || !slices.Equal(got, []string{"us-central1-b/b"}) ||
		!slices.Equal(l.Unreachables, []string{"zones/us-central1-a"}) {
		t.Errorf("partial success: want b alone and zones/us-central1-a unreachable, got %v, unreachables %v", got, l.Unreachables)
	}
	_, err = svc.Instances.AggregatedList(project).Do()
	if code, _, _ := apiError(t, err); code != 503 {
		t.Errorf("without partial success: want 503, got %d", code)
	}
	em.SetUnreachableZones()
	if l, err := svc.Instances.AggregatedList(project).Do(); err != nil || len(l.Unreachables) != 0 {
		t.Errorf("reachable again: want a full list, got %v, %v", l.Unreachables, err)
	}
}
