package ownership

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// counts returns every series of the ownership counters as
// "name{label values}" -> value.
func counts(t *testing.T) map[string]float64 {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			k := mf.GetName() + "{"
			for i, l := range m.GetLabel() {
				if i > 0 {
					k += ","
				}
				k += l.GetName() + "=" + l.GetValue()
			}
			out[k+"}"] = m.GetCounter().GetValue()
		}
	}
	return out
}

// delta returns after - before, leaving out the series that did not move.
func delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func TestCounters(t *testing.T) {
	cases := map[string]struct {
		reason string
		objs   []client.Object
		decide func(ctx context.Context, t *testing.T, i *Index)
		want   map[string]float64
	}{
		"RuleAdmitted": {
			reason: "A rule that may write counts nothing.",
			objs:   []client.Object{policy("team-a", "edge")},
			decide: func(ctx context.Context, t *testing.T, i *Index) {
				if _, err := i.RuleStanding(ctx, rule("team-a", "r", 100), key); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]float64{},
		},
		"RuleNamespaceNotAdmitted": {
			reason: "A rule whose namespace the owning policy does not admit is a refused claim, as the rule's reconcile sees it.",
			objs:   []client.Object{policy("team-a", "edge")},
			decide: func(ctx context.Context, t *testing.T, i *Index) {
				if _, err := i.RuleStanding(ctx, rule("team-b", "r", 100), key); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]float64{"cloudarmor_claims_refused_total{kind=SecurityPolicyRule}": 1},
		},
		"RuleOlderOwner": {
			reason: "A rule that an older rule object outranks at its priority is an ownership conflict.",
			objs:   []client.Object{policy("team-a", "edge"), rule("team-a", "old", 100, createdAt(5))},
			decide: func(ctx context.Context, t *testing.T, i *Index) {
				if _, err := i.RuleStanding(ctx, rule("team-a", "new", 100, createdAt(10)), key); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]float64{"cloudarmor_ownership_conflicts_total{kind=SecurityPolicyRule,reason=OlderOwner}": 1},
		},
		"PolicyRefusesClaims": {
			reason: "A policy's reconcile counts each claim it refuses, under its own kind.",
			objs: []client.Object{
				rule("team-a", "ok", 100),
				rule("team-b", "r1", 200),
				rule("team-c", "r2", 300),
			},
			decide: func(ctx context.Context, t *testing.T, i *Index) {
				if _, _, err := i.Claims(ctx, policy("team-a", "edge"), key); err != nil {
					t.Fatal(err)
				}
			},
			want: map[string]float64{"cloudarmor_claims_refused_total{kind=SecurityPolicy}": 2},
		},
		"PolicyOlderOwner": {
			reason: "A policy refused because an older policy owns its GCP policy is an ownership conflict.",
			decide: func(context.Context, *testing.T, *Index) {
				_ = PolicyRefusal(key, policy("team-a", "edge"))
			},
			want: map[string]float64{"cloudarmor_ownership_conflicts_total{kind=SecurityPolicy,reason=OlderOwner}": 1},
		},
		"ControllerDecisions": {
			reason: "Conflicts a controller decides itself are counted as it says, and a count of zero adds nothing.",
			decide: func(context.Context, *testing.T, *Index) {
				CountConflicts(v1beta1.SecurityPolicyKind, ConflictOwnerLabel, 1)
				CountConflicts(v1beta1.SecurityPolicyKind, ConflictPriorityClaimed, 3)
				CountConflicts(v1beta1.SecurityPolicyKind, ConflictPriorityClaimed, 0)
			},
			want: map[string]float64{
				"cloudarmor_ownership_conflicts_total{kind=SecurityPolicy,reason=OwnerLabel}":      1,
				"cloudarmor_ownership_conflicts_total{kind=SecurityPolicy,reason=PriorityClaimed}": 3,
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			i := NewIndex(world(t, tc.objs...))
			before := counts(t)
			tc.decide(context.Background(), t, i)
			if diff := cmp.Diff(tc.want, delta(before, counts(t))); diff != "" {
				t.Errorf("\n%s\ncounters moved: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCountersFromTheStart(t *testing.T) {
	// Every kind and reason that can happen has a series before it does.
	got := map[string]bool{}
	for k := range counts(t) {
		got[k] = true
	}
	want := map[string]bool{
		"cloudarmor_claims_refused_total{kind=SecurityPolicy}":                                         true,
		"cloudarmor_claims_refused_total{kind=SecurityPolicyRule}":                                     true,
		"cloudarmor_ownership_conflicts_total{kind=SecurityPolicy,reason=OlderOwner}":                  true,
		"cloudarmor_ownership_conflicts_total{kind=SecurityPolicy,reason=OwnerLabel}":                  true,
		"cloudarmor_ownership_conflicts_total{kind=SecurityPolicy,reason=PriorityClaimed}":             true,
		"cloudarmor_ownership_conflicts_total{kind=SecurityPolicyRule,reason=OlderOwner}":              true,
		"cloudarmor_ownership_conflicts_total{kind=OrganizationSecurityPolicyRule,reason=OlderOwner}":  true,
		"cloudarmor_ownership_conflicts_total{kind=OrganizationSecurityPolicyRule,reason=PolicyRules}": true,
		"cloudarmor_ownership_conflicts_total{kind=SecurityPolicyAttachment,reason=OlderOwner}":        true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("series: -want, +got:\n%s", diff)
	}
}
