package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// TestSecurityPolicyAllowlist runs the allowlist against the real API server
// and the emulator: Nodes come and go and GCP follows without any status
// write in between; the rules of ten stay stable; a burst costs the allowlist
// a bounded number of status writes; rules an IPAllowlist composition made
// before allowlists existed are adopted in place; delete removes the rules.
func TestSecurityPolicyAllowlist(t *testing.T) {
	e := startProvider(t, emulator.Options{})
	ctx := context.Background()
	for i := 1; i <= 25; i++ {
		e.createNode(t, i, "web")
	}
	e.createNode(t, 200, "batch")

	al := &v1alpha1.SecurityPolicyAllowlist{
		ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "web"},
		Spec: v1alpha1.SecurityPolicyAllowlistSpec{
			SecurityPolicy:  "web-allowlist",
			CreatePolicy:    &v1alpha1.AllowlistPolicy{DefaultAction: "deny(403)"},
			PriorityRange:   v1alpha1.AllowlistPriorityRange{First: 1000, Last: 1009},
			RuleDescription: "IPAllowlist default/web",
			Sources: []v1alpha1.AllowlistSource{
				{Name: "office", CIDRs: []string{"203.0.113.0/26", "2001:db8:10::/48"}},
				{Name: "pool-web", Nodes: &v1alpha1.AllowlistNodes{NodeSelector: v1alpha1.NodeSelector{MatchLabels: map[string]string{"pool": "web"}}, ShrinkHoldSeconds: ptr.To[int32](0)}},
			},
		},
	}
	if err := e.kube.Create(ctx, al); err != nil {
		t.Fatal(err)
	}
	want := nodeRanges(1, 25)
	want = append(want, "203.0.113.0/26", "2001:db8:10::/48")
	e.waitAllowed(t, "web-allowlist", 1000, 1009, want)
	e.waitAllowlist(t, al, 27, 3)
	if sp, err := e.gcpPolicy("", "web-allowlist"); err != nil || len(sp.Rules) != 4 || sp.Rules[len(sp.Rules)-1].Action != "deny(403)" {
		t.Errorf("the policy the allowlist created: want three allow rules and a default rule of deny(403), got %v (%v)", armor.RulesOf(sp), err)
	}

	t.Run("NodeAddedFillsAHole", func(t *testing.T) {
		before := e.mutations()
		e.createNode(t, 26, "web")
		e.waitAllowed(t, "web-allowlist", 1000, 1009, append(slices.Clone(want), nodeRanges(26, 26)...))
		if got := e.mutations() - before; got != 1 {
			t.Errorf("GCP writes for one Node added: want 1 (the rule with a hole patched), got %d", got)
		}
		want = append(want, nodeRanges(26, 26)...)
	})

	t.Run("BurstCostsFewStatusWrites", func(t *testing.T) {
		e.get(t, al)
		rv := al.ResourceVersion
		writes := 0
		stop := e.countWrites(al, &writes)
		for i := 27; i <= 66; i++ {
			e.createNode(t, i, "web")
		}
		want = append(want, nodeRanges(27, 66)...)
		e.waitAllowed(t, "web-allowlist", 1000, 1009, want)
		e.waitAllowlist(t, al, len(want), 7)
		stop()
		if writes > 3 {
			t.Errorf("status writes of the allowlist during a burst of 40 Nodes: want at most 3, got %d (from resourceVersion %s)", writes, rv)
		}
		t.Logf("a burst of 40 Nodes: %d status write(s) of the allowlist", writes)
	})

	t.Run("NodesRemoved", func(t *testing.T) {
		for i := 27; i <= 66; i++ {
			e.deleteNode(t, i)
		}
		want = slices.DeleteFunc(want, func(s string) bool { return slices.Contains(nodeRanges(27, 66), s) })
		e.waitAllowed(t, "web-allowlist", 1000, 1009, want)
		e.waitAllowlist(t, al, len(want), 3)
	})

	t.Run("Deleted", func(t *testing.T) {
		e.get(t, al)
		if err := e.kube.Delete(ctx, al); err != nil {
			t.Fatal(err)
		}
		eventually(t, waitFor, "the policy the allowlist created to be gone from GCP", func() error {
			if _, err := e.gcpPolicy("", "web-allowlist"); err == nil {
				return fmt.Errorf("policy web-allowlist is still there")
			}
			return nil
		})
		eventually(t, waitFor, "the allowlist and its objects to be gone", func() error {
			for _, o := range []client.Object{al, &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "web-nodes-pool-web"}},
				&v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "web-allowlist"}},
				&v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "web-1000"}}} {
				if err := e.kube.Get(ctx, client.ObjectKeyFromObject(o), o); err == nil {
					return fmt.Errorf("%s still there", o.GetName())
				}
			}
			return nil
		})
	})

	t.Run("AdoptsWhatItsCompositeComposed", e.testAllowlistAdoption)
}

// testAllowlistAdoption: the policy and a rule an IPAllowlist composition
// composed (their controller the composite, Crossplane's labels and
// annotation) are taken over by the allowlist that composite composes, without
// any GCP write: an upgrade keeps allowing every address. A rule another
// composite composed is left alone.
func (e *env) testAllowlistAdoption(t *testing.T) {
	ctx := context.Background()
	owner := func(name string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: name}}
		if err := e.kube.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
		return cm
	}
	composedBy := func(o client.Object, xr *corev1.ConfigMap, resourceName string) {
		o.SetLabels(map[string]string{"crossplane.io/composite": xr.GetName()})
		o.SetAnnotations(map[string]string{"crossplane.io/composition-resource-name": resourceName})
		o.SetOwnerReferences([]metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: xr.GetName(), UID: xr.GetUID(), Controller: ptr.To(true)}})
	}
	xr, other := owner("adopt"), owner("other")

	// What the old composition made: the policy and rule-2000 of xr, rule-2001
	// of another composite.
	sp := armor.NewPolicy("adopt-allowlist", func(p *v1beta1.SecurityPolicyParameters) {
		p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
	})
	composedBy(sp, xr, "policy")
	if err := e.kube.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	e.waitReady(t, sp)
	mine := armor.NewRule("adopt-2000", "adopt-allowlist", armor.AllowRule(2000, "198.51.100.1/32", "198.51.100.2/32"))
	composedBy(mine, xr, "rule-2000")
	theirs := armor.NewRule("adopt-2001", "adopt-allowlist", armor.AllowRule(2001, "198.51.100.3/32"))
	composedBy(theirs, other, "rule-2001")
	for _, r := range []*v1beta1.SecurityPolicyRule{mine, theirs} {
		if err := e.kube.Create(ctx, r); err != nil {
			t.Fatal(err)
		}
		e.waitReady(t, r)
	}
	before := e.mutations()

	al := &v1alpha1.SecurityPolicyAllowlist{
		ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "adopt"},
		Spec: v1alpha1.SecurityPolicyAllowlistSpec{
			SecurityPolicy: "adopt-allowlist", CreatePolicy: &v1alpha1.AllowlistPolicy{DefaultAction: "deny(403)"},
			PriorityRange: v1alpha1.AllowlistPriorityRange{First: 2000, Last: 2000},
			Sources:       []v1alpha1.AllowlistSource{{Name: "partners", CIDRs: []string{"198.51.100.1", "198.51.100.2"}}},
		},
	}
	composedBy(al, xr, "allowlist")
	if err := e.kube.Create(ctx, al); err != nil {
		t.Fatal(err)
	}
	e.waitAllowlist(t, al, 2, 1)
	for _, o := range []client.Object{mine, sp} {
		e.get(t, o)
		if !metav1.IsControlledBy(o, al) {
			t.Errorf("%s of the allowlist's composite: want it controlled by the allowlist, owner references %v", o.GetName(), o.GetOwnerReferences())
		}
	}
	e.get(t, theirs)
	if metav1.IsControlledBy(theirs, al) || theirs.GetLabels()["cloudarmor.armorplane.io/allowlist"] != "" {
		t.Errorf("a rule of another composite was adopted: %v", theirs.GetOwnerReferences())
	}
	if got := e.mutations() - before; got != 0 {
		t.Errorf("GCP writes while adopting rules that already hold the ranges: want 0, got %d", got)
	}
}

func (e *env) createNode(t *testing.T, i int, pool string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i), Labels: map[string]string{"pool": pool}}}
	if err := e.kube.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: nodeIP(i)}}
	if err := e.kube.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func (e *env) deleteNode(t *testing.T, i int) {
	t.Helper()
	if err := e.kube.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node-%d", i)}}); err != nil {
		t.Fatal(err)
	}
}

func nodeIP(i int) string { return fmt.Sprintf("192.0.2.%d", i) }

func nodeRanges(from, to int) []string {
	out := make([]string, 0, to-from+1)
	for i := from; i <= to; i++ {
		out = append(out, nodeIP(i)+"/32")
	}
	return out
}

// waitAllowed waits until the rules of policy in first..last allow exactly
// want, in rules of at most ten.
func (e *env) waitAllowed(t *testing.T, policy string, first, last int64, want []string) {
	t.Helper()
	want = slices.Sorted(slices.Values(want))
	eventually(t, waitFor, fmt.Sprintf("policy %s to allow %d ranges", policy, len(want)), func() error {
		sp, err := e.gcpPolicy("", policy)
		if err != nil {
			return err
		}
		var got []string
		for _, r := range sp.Rules {
			if r.Priority < first || r.Priority > last || r.Match == nil || r.Match.Config == nil {
				continue
			}
			if len(r.Match.Config.SrcIpRanges) > 10 || len(r.Match.Config.SrcIpRanges) == 0 {
				return fmt.Errorf("rule %d holds %d ranges", r.Priority, len(r.Match.Config.SrcIpRanges))
			}
			got = append(got, r.Match.Config.SrcIpRanges...)
		}
		slices.Sort(got)
		if !slices.Equal(got, want) {
			return fmt.Errorf("allows %d ranges, want %d: %s", len(got), len(want), strings.Join(got, " "))
		}
		return nil
	})
}

// waitAllowlist waits until the allowlist is Ready and Current and says it
// holds ips ranges in rules rules.
func (e *env) waitAllowlist(t *testing.T, al *v1alpha1.SecurityPolicyAllowlist, ips, rules int) {
	t.Helper()
	eventually(t, waitFor, fmt.Sprintf("allowlist %s to say %d ranges in %d rules", al.GetName(), ips, rules), func() error {
		if err := e.kube.Get(context.Background(), client.ObjectKeyFromObject(al), al); err != nil {
			return err
		}
		for _, ct := range []xpv2.ConditionType{xpv2.TypeReady, v1alpha1.TypeCurrent} {
			if c := al.Status.GetCondition(ct); c.Status != corev1.ConditionTrue {
				return fmt.Errorf("%s=%s %s: %s", ct, c.Status, c.Reason, c.Message)
			}
		}
		if al.Status.IPCount != ips || al.Status.RuleCount != rules {
			return fmt.Errorf("status says %d ranges in %d rules", al.Status.IPCount, al.Status.RuleCount)
		}
		return nil
	})
}

// countWrites counts the allowlist's updates until stop is called.
func (e *env) countWrites(al *v1alpha1.SecurityPolicyAllowlist, n *int) (stop func()) {
	wc, err := client.NewWithWatch(e.cp.Config, client.Options{Scheme: e.kube.Scheme()})
	if err != nil {
		panic(err)
	}
	w, err := wc.Watch(context.Background(), &v1alpha1.SecurityPolicyAllowlistList{},
		client.InNamespace(al.GetNamespace()), client.MatchingFields{"metadata.name": al.GetName()})
	if err != nil {
		panic(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			if ev.Type == "MODIFIED" {
				*n++
			}
		}
	}()
	return func() { w.Stop(); <-done }
}
