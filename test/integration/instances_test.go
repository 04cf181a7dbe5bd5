package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// instancePoll is the instance source's poll interval, the CRD's minimum.
const instancePoll = 5 * time.Second

// TestInstanceSourceAllowlist runs an allowlist with an instance source
// against the real API server and the emulator: instances inserted,
// relabelled, stopped and deleted in GCP are followed within one poll; a
// quiet project costs one aggregatedList per poll and no status write; an
// outage of the list holds the last addresses, says so on the AddressSet,
// and recovers by itself.
func TestInstanceSourceAllowlist(t *testing.T) {
	e := startProvider(t, emulator.Options{})
	ctx := context.Background()
	e.insertVM(t, "us-central1-a", "web-1", "web", 1)
	e.insertVM(t, "us-central1-b", "web-2", "web", 2)
	e.insertVM(t, "europe-west1-b", "web-3", "web", 3)
	e.insertVM(t, "us-central1-a", "batch-1", "batch", 9)

	al := &v1alpha1.SecurityPolicyAllowlist{
		ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "fleet"},
		Spec: v1alpha1.SecurityPolicyAllowlistSpec{
			SecurityPolicy:  "fleet-allowlist",
			CreatePolicy:    &v1alpha1.AllowlistPolicy{DefaultAction: "deny(403)"},
			PriorityRange:   v1alpha1.AllowlistPriorityRange{First: 1000, Last: 1009},
			RuleDescription: "IPAllowlist default/fleet",
			Sources: []v1alpha1.AllowlistSource{
				{Name: "office", CIDRs: []string{"203.0.113.0/26"}},
				{Name: "pool-web", Instances: &v1alpha1.AllowlistInstances{
					InstanceSelector:  v1alpha1.InstanceSelector{MatchLabels: map[string]string{"pool": "web"}, PollSeconds: ptr.To(int32(instancePoll.Seconds()))},
					ShrinkHoldSeconds: ptr.To[int32](0)}},
			},
		},
	}
	if err := e.kube.Create(ctx, al); err != nil {
		t.Fatal(err)
	}
	want := []string{vmIP(1), vmIP(2), vmIP(3), "203.0.113.0/26"}
	e.waitAllowed(t, "fleet-allowlist", 1000, 1009, want)
	set := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "fleet-nodes-pool-web"}}
	t.Cleanup(func() {
		if t.Failed() {
			_ = e.kube.Get(ctx, client.ObjectKeyFromObject(set), set)
			_ = e.kube.Get(ctx, client.ObjectKeyFromObject(al), al)
			t.Logf("on failure: emulator calls %v; AddressSet status %+v; allowlist status %+v", e.emu.Stats().Methods, set.Status, al.Status)
		}
	})

	// follow makes a change in GCP and waits for the policy to allow want,
	// measuring the time from the change to the policy holding it.
	follow := func(what string, change func(), want []string) {
		t.Helper()
		start := time.Now()
		change()
		e.waitAllowed(t, "fleet-allowlist", 1000, 1009, want)
		took := time.Since(start)
		t.Logf("%s: the policy followed in %s (poll %s)", what, took.Round(10*time.Millisecond), instancePoll)
		// One poll, plus the allowlist's own write to GCP and the test's
		// look, which is not instant on a shared machine.
		if took > instancePoll+3*time.Second {
			t.Errorf("%s: the policy followed in %s, want within one poll (%s) and 3 s", what, took, instancePoll)
		}
	}
	t.Run("Inserted", func(t *testing.T) {
		want = append(want, vmIP(4))
		follow("an instance inserted", func() { e.insertVM(t, "us-east1-b", "web-4", "web", 4) }, want)
	})
	t.Run("Relabelled", func(t *testing.T) {
		want = slices.DeleteFunc(want, func(s string) bool { return s == vmIP(1) })
		follow("an instance relabelled out of the pool", func() { e.relabelVM(t, "us-central1-a", "web-1", "batch") }, want)
	})
	t.Run("Stopped", func(t *testing.T) {
		want = slices.DeleteFunc(want, func(s string) bool { return s == vmIP(2) })
		follow("an instance stopped", func() {
			if _, err := e.gcp.Instances.Stop(project, "us-central1-b", "web-2").Do(); err != nil {
				t.Fatal(err)
			}
		}, want)
		eventually(t, waitFor, "the AddressSet to list the stopped instance as skipped", func() error {
			e.get(t, set)
			if set.Status.SkippedCount != 1 || set.Status.Skipped[0].Name != "us-central1-b/web-2" {
				return fmt.Errorf("skipped: %+v", set.Status.Skipped)
			}
			return nil
		})
	})
	t.Run("Deleted", func(t *testing.T) {
		want = slices.DeleteFunc(want, func(s string) bool { return s == vmIP(3) })
		follow("an instance deleted", func() {
			if _, err := e.gcp.Instances.Delete(project, "europe-west1-b", "web-3").Do(); err != nil {
				t.Fatal(err)
			}
		}, want)
	})

	t.Run("QuietCostsOneListPerPoll", func(t *testing.T) {
		time.Sleep(instancePoll) // the status of the last change is written
		e.get(t, set)
		rv := set.ResourceVersion
		before := e.emu.Stats().Methods["instances.aggregatedList"]
		const polls = 4
		time.Sleep(polls * instancePoll)
		lists := e.emu.Stats().Methods["instances.aggregatedList"] - before
		t.Logf("%s without a change: %d aggregatedList call(s), %d poll(s)", polls*instancePoll, lists, polls)
		if lists < polls-1 || lists > polls+1 {
			t.Errorf("aggregatedList calls in %d polls: want %d±1, got %d", polls, polls, lists)
		}
		e.get(t, set)
		if set.ResourceVersion != rv {
			t.Errorf("the AddressSet was written without a change (resourceVersion %s, then %s)", rv, set.ResourceVersion)
		}
	})

	t.Run("OutageHoldsAndRecovers", func(t *testing.T) {
		if err := e.emu.SetFaults(emulator.Faults{Methods: map[string]emulator.FaultRule{"instances.aggregatedList": {ErrorRate: 1, ErrorCodes: []int{503}}}}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.gcp.Instances.Delete(project, "us-east1-b", "web-4").Do(); err != nil {
			t.Fatal(err)
		}
		eventually(t, waitFor, "the AddressSet to say the instances cannot be read", func() error {
			e.get(t, set)
			c := set.Status.GetCondition(xpv2.TypeReady)
			if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, "cannot read the instances of project it-project labelled pool=web since") ||
				!strings.Contains(c.Message, "Error 503") {
				return fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
			}
			return nil
		})
		time.Sleep(2 * instancePoll)
		e.waitAllowed(t, "fleet-allowlist", 1000, 1009, want) // web-4 still allowed: unreadable is not empty

		if err := e.emu.SetFaults(emulator.Faults{}); err != nil {
			t.Fatal(err)
		}
		want = slices.DeleteFunc(want, func(s string) bool { return s == vmIP(4) })
		follow("the list recovered", func() {}, want)
		eventually(t, waitFor, "the AddressSet to be Ready again", func() error {
			e.get(t, set)
			if c := set.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
				return fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
			}
			return nil
		})
	})
}

func vmIP(i int) string { return fmt.Sprintf("198.51.100.%d/32", i) }

// insertVM inserts an instance labelled pool with natIP 198.51.100.i.
func (e *env) insertVM(t *testing.T, zone, name, pool string, i int) {
	t.Helper()
	vm := &compute.Instance{Name: name, MachineType: "e2-small", Labels: map[string]string{"pool": pool},
		NetworkInterfaces: []*compute.NetworkInterface{{AccessConfigs: []*compute.AccessConfig{{NatIP: strings.TrimSuffix(vmIP(i), "/32")}}}}}
	if _, err := e.gcp.Instances.Insert(project, zone, vm).Do(); err != nil {
		t.Fatal(err)
	}
}

func (e *env) relabelVM(t *testing.T, zone, name, pool string) {
	t.Helper()
	vm, err := e.gcp.Instances.Get(project, zone, name).Do()
	if err != nil {
		t.Fatal(err)
	}
	req := &compute.InstancesSetLabelsRequest{Labels: map[string]string{"pool": pool}, LabelFingerprint: vm.LabelFingerprint}
	if _, err := e.gcp.Instances.SetLabels(project, zone, name, req).Do(); err != nil {
		t.Fatal(err)
	}
}
