package gcppolicy

import (
	"maps"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

const (
	deny403  = "deny(403)"
	claimant = "team-a/block-bad"
	defPrio  = v1beta1.DefaultRulePriority
	rangeA   = "192.0.2.0/24"
	rangeB   = "198.51.100.0/24"
	ownerKey = "armorplane-owner"
)

// observed is a policy as GCP returns it, with GCP's "allow *" default rule
// after the given rules.
func observed(labels map[string]string, description string, rs ...*compute.SecurityPolicyRule) *compute.SecurityPolicy {
	def := rule(defPrio, "allow", withMatch(srcIPs("*")))
	return policy(func(p *compute.SecurityPolicy) {
		p.Labels, p.Description, p.Rules = labels, description, append(rs, def)
	})
}

func denyRule(priority int64, ranges ...string) *compute.SecurityPolicyRule {
	return rule(priority, deny403, withMatch(srcIPs(ranges...)))
}

func TestUnclaimed(t *testing.T) {
	type args struct {
		p      v1beta1.SecurityPolicyParameters
		claims Claims
	}
	r500, r2000 := inlineRule(500, deny403, rangeA), inlineRule(2000, deny403, rangeB)
	cases := map[string]struct {
		reason string
		args   args
		want   v1beta1.SecurityPolicyParameters
	}{
		"RulesUnset": {
			reason: "Unset rules stay unset (hands off).",
			args:   args{p: v1beta1.SecurityPolicyParameters{Description: ptr("d")}, claims: Claims{500: claimant}},
			want:   v1beta1.SecurityPolicyParameters{Description: ptr("d")},
		},
		"RulesEmpty": {
			reason: "rules: [] stays [] (own every unclaimed priority), not unset.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{}}},
			want:   v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{}},
		},
		"NoClaims": {
			reason: "Without claims every inline rule is kept, in order.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{r2000, r500}}},
			want:   v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{r2000, r500}},
		},
		"ClaimedRuleDropped": {
			reason: "An inline rule at a claimed priority is dropped.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{r500, r2000}}, claims: Claims{2000: claimant}},
			want:   v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{r500}},
		},
		"AllClaimed": {
			reason: "When every inline rule is claimed the policy still owns the other priorities: [] not unset.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{r500}}, claims: Claims{500: claimant}},
			want:   v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{}},
		},
		"DefaultRuleClaimed": {
			reason: "A claimed default priority drops spec.defaultRule, with rules unset too.",
			args: args{p: v1beta1.SecurityPolicyParameters{DefaultRule: &v1beta1.RuleParameters{Action: deny403}},
				claims: Claims{defPrio: claimant}},
			want: v1beta1.SecurityPolicyParameters{},
		},
		"DefaultRuleKept": {
			reason: "An unclaimed default rule is kept.",
			args: args{p: v1beta1.SecurityPolicyParameters{DefaultRule: &v1beta1.RuleParameters{Action: deny403}},
				claims: Claims{500: claimant}},
			want: v1beta1.SecurityPolicyParameters{DefaultRule: &v1beta1.RuleParameters{Action: deny403}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			in := *tc.args.p.DeepCopy()
			got := unclaimed(tc.args.p, tc.args.claims)
			// No EquateEmpty: [] and unset rules mean different things.
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nunclaimed(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(in, tc.args.p); diff != "" {
				t.Errorf("\n%s\nunclaimed(...): modified its input: -before, +after:\n%s", tc.reason, diff)
			}
		})
	}
}

// planSummary is the part of a PolicyPlan a test can state exactly (the
// human-readable diffs are go-cmp output, which is deliberately unstable).
type planSummary struct {
	Patch            bool
	Labels           bool
	DefaultRule      bool
	DefaultClaimedBy string
	Add              []int64
	PatchRules       []int64
	Remove           []int64
	Conflicts        []int64
	UpToDate         bool
}

func summarise(d PolicyPlan) planSummary {
	s := planSummary{Patch: d.Patch != "", Labels: d.Labels, DefaultRule: d.DefaultRule != "", DefaultClaimedBy: d.DefaultClaimedBy,
		Add: priorities(d.Rules.Add), PatchRules: priorities(d.Rules.Patch), Remove: d.Rules.Remove, UpToDate: d.UpToDate()}
	for _, c := range d.Rules.Conflicts {
		s.Conflicts = append(s.Conflicts, c.Priority)
	}
	return s
}

func TestPlanPolicy(t *testing.T) {
	type args struct {
		p   v1beta1.SecurityPolicyParameters
		sp  *compute.SecurityPolicy
		own Ownership
	}
	owner := map[string]string{ownerKey: "0123456789abcdef0123456789abcdef"}
	labelled := observed(map[string]string{"env": "prod"}, "edge")
	withRulesAt := observed(nil, "", denyRule(1000, rangeA), denyRule(2000, rangeB))
	deny := &v1beta1.RuleParameters{Action: deny403}

	cases := map[string]struct {
		reason string
		args   args
		want   planSummary
	}{
		"EmptySpec": {
			reason: "A spec that sets nothing is up to date with any policy.",
			args:   args{sp: withRulesAt},
			want:   planSummary{UpToDate: true},
		},
		"Description": {
			reason: "A different description needs a patch.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Description: ptr("new")}, sp: labelled},
			want:   planSummary{Patch: true},
		},
		"LabelsNilDontCare": {
			reason: "Unset labels are don't care.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Description: ptr("edge")}, sp: labelled},
			want:   planSummary{UpToDate: true},
		},
		"LabelsEmpty": {
			reason: "labels: {} removes GCP's labels.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Labels: map[string]string{}}, sp: labelled},
			want:   planSummary{Labels: true},
		},
		"LabelsEmptyNoneInGCP": {
			reason: "labels: {} and a policy without labels agree.",
			args:   args{p: v1beta1.SecurityPolicyParameters{Labels: map[string]string{}}, sp: observed(nil, "")},
			want:   planSummary{UpToDate: true},
		},
		"OwnerLabelMissing": {
			reason: "An unlabelled policy needs the owner label, even with spec.labels unset.",
			args:   args{sp: labelled, own: Ownership{Labels: owner}},
			want:   planSummary{Labels: true},
		},
		"OwnerLabelIsNoDriftWithLabelsUnset": {
			reason: "The owner label is never drift of its own: with spec.labels unset, GCP's other labels are don't care.",
			args:   args{sp: observed(map[string]string{"env": "prod", ownerKey: owner[ownerKey]}, ""), own: Ownership{Labels: owner}},
			want:   planSummary{UpToDate: true},
		},
		"OwnerLabelIsNoDriftWithLabelsSet": {
			reason: "spec.labels plus the owner label is what GCP holds: up to date.",
			args: args{p: v1beta1.SecurityPolicyParameters{Labels: map[string]string{"env": "prod"}},
				sp: observed(map[string]string{"env": "prod", ownerKey: owner[ownerKey]}, ""), own: Ownership{Labels: owner}},
			want: planSummary{UpToDate: true},
		},
		"OwnerLabelKeptWhenSpecLabelsChange": {
			reason: "labels: {} removes the user's labels but not the owner label; a policy with only the owner label is up to date.",
			args: args{p: v1beta1.SecurityPolicyParameters{Labels: map[string]string{}},
				sp: observed(map[string]string{ownerKey: owner[ownerKey]}, ""), own: Ownership{Labels: owner}},
			want: planSummary{UpToDate: true},
		},
		"DefaultRule": {
			reason: "A default rule that differs needs a patchRule.",
			args:   args{p: v1beta1.SecurityPolicyParameters{DefaultRule: deny}, sp: observed(nil, "")},
			want:   planSummary{DefaultRule: true},
		},
		"DefaultRuleClaimed": {
			reason: "A claimed default priority is not compared, and records its claimant.",
			args: args{p: v1beta1.SecurityPolicyParameters{DefaultRule: deny}, sp: observed(nil, ""),
				own: Ownership{Claims: Claims{defPrio: claimant}}},
			want: planSummary{DefaultClaimedBy: claimant, UpToDate: true},
		},
		"DefaultClaimedButUnset": {
			reason: "A claimed default priority without spec.defaultRule is no conflict.",
			args:   args{sp: observed(nil, ""), own: Ownership{Claims: Claims{defPrio: claimant}}},
			want:   planSummary{UpToDate: true},
		},
		"RulesEmpty": {
			reason: "rules: [] removes every unclaimed non-default rule.",
			args: args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{}}, sp: withRulesAt,
				own: Ownership{Claims: Claims{2000: claimant}}},
			want: planSummary{Remove: []int64{1000}},
		},
		"RulesPlanned": {
			reason: "Inline rules are added, patched, kept or reported against what GCP holds.",
			args: args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{
				inlineRule(500, deny403, rangeA), inlineRule(1000, "allow", rangeA), inlineRule(2000, deny403, rangeB)}},
				sp: withRulesAt, own: Ownership{Claims: Claims{2000: claimant}}},
			want: planSummary{Add: []int64{500}, PatchRules: []int64{1000}, Conflicts: []int64{2000}},
		},
		"ConflictsOnly": {
			reason: "Conflicts alone are reported, not written: up to date.",
			args: args{p: v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{inlineRule(1000, deny403, rangeA), inlineRule(2000, "allow", rangeA)}},
				sp: withRulesAt, own: Ownership{Claims: Claims{2000: claimant}}},
			want: planSummary{Conflicts: []int64{2000}, UpToDate: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := summarise(PlanPolicy(tc.args.p, tc.args.sp, tc.args.own))
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nPlanPolicy(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestInsertBodyLabels(t *testing.T) {
	owner := map[string]string{ownerKey: "0123456789abcdef0123456789abcdef"}
	cases := map[string]struct {
		reason string
		p      v1beta1.SecurityPolicyParameters
		own    Ownership
		want   map[string]string
	}{
		"OwnerOnly": {
			reason: "A policy without spec.labels is created with the owner label.",
			own:    Ownership{Labels: owner},
			want:   owner,
		},
		"Merged": {
			reason: "spec.labels and the owner label are merged.",
			p:      v1beta1.SecurityPolicyParameters{Labels: map[string]string{"env": "prod"}},
			own:    Ownership{Labels: owner},
			want:   map[string]string{"env": "prod", ownerKey: owner[ownerKey]},
		},
		"NoOwner": {
			reason: "Without an owner label only spec.labels are sent.",
			p:      v1beta1.SecurityPolicyParameters{Labels: map[string]string{"env": "prod"}},
			want:   map[string]string{"env": "prod"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := InsertBody("edge", tc.p, tc.own).Labels
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nInsertBody(...).Labels: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestPolicyPlanString(t *testing.T) {
	cases := map[string]struct {
		reason string
		d      PolicyPlan
		want   string
	}{
		"Empty": {
			reason: "Nothing to do is an empty diff.",
			want:   "",
		},
		"Everything": {
			reason: "Each part is one line, in the order ApplyPolicy writes them.",
			d: PolicyPlan{Patch: "description (-want +got): ...", Labels: true, DefaultRule: "default rule (-want +got): ...",
				Rules: RulePlan{Remove: []int64{1000}}},
			want: "description (-want +got): ...\nlabels differ\ndefault rule (-want +got): ...\nremove rules at priorities [1000]",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.d.String()); diff != "" {
				t.Errorf("\n%s\nString(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestTypeUpToDate(t *testing.T) {
	edge := "CLOUD_ARMOR_EDGE"
	cases := map[string]struct {
		reason string
		p      v1beta1.SecurityPolicyParameters
		sp     *compute.SecurityPolicy
		want   bool
	}{
		"Unset":      {reason: "An unset type is don't care.", sp: policy(), want: true},
		"Same":       {reason: "The same type is up to date.", p: v1beta1.SecurityPolicyParameters{Type: ptr("CLOUD_ARMOR")}, sp: policy(), want: true},
		"GCPDefault": {reason: "A policy GCP reports without a type is CLOUD_ARMOR.", p: v1beta1.SecurityPolicyParameters{Type: ptr("CLOUD_ARMOR")}, sp: policy(func(p *compute.SecurityPolicy) { p.Type = "" }), want: true},
		"Mismatch":   {reason: "Another type is a mismatch GCP cannot patch.", p: v1beta1.SecurityPolicyParameters{Type: &edge}, sp: policy(), want: false},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, msg := TypeUpToDate(tc.p, tc.sp)
			if got != tc.want {
				t.Errorf("\n%s\nTypeUpToDate(...): want %t, got %t (%s)", tc.reason, tc.want, got, msg)
			}
			if !got && msg == "" {
				t.Errorf("\n%s\nTypeUpToDate(...): a mismatch needs a message", tc.reason)
			}
		})
	}
}

// provided are the labels the provider puts on a policy it owns: the owner
// label and the provenance labels.
var provided = map[string]string{
	ownerKey:                         "0123456789abcdef0123456789abcdef",
	"crossplane-kind":                "securitypolicy_cloudarmor_armorplane_io",
	"crossplane-name":                "edge",
	"crossplane-namespace":           "team-a",
	"crossplane-providerconfig":      "default",
	"crossplane-providerconfig-kind": "providerconfig",
}

// with returns provided plus extra.
func with(extra map[string]string) map[string]string {
	out := maps.Clone(provided)
	maps.Copy(out, extra)
	return out
}

func TestWantLabels(t *testing.T) {
	cases := map[string]struct {
		reason   string
		spec     map[string]string
		own      map[string]string
		observed map[string]string
		want     map[string]string
	}{
		"DontCareNothingProvided": {
			reason: "Without spec.labels or provided labels, labels are don't care.",
			want:   nil,
		},
		"DontCareKeepsGCPLabels": {
			reason: "Without spec.labels, GCP's labels stay and the provided ones are added.",
			own:    provided, observed: map[string]string{"team": "console"},
			want: with(map[string]string{"team": "console"}),
		},
		"SpecMerged": {
			reason: "spec.labels and the provided labels are merged; labels only GCP holds go.",
			spec:   map[string]string{"env": "prod"}, own: provided, observed: map[string]string{"team": "console"},
			want: with(map[string]string{"env": "prod"}),
		},
		"ProvidedWin": {
			reason: "A spec label with a provided key (admission refuses it) cannot make the policy name another object.",
			spec:   map[string]string{"crossplane-namespace": "team-b", ownerKey: "ffff"}, own: provided,
			want: provided,
		},
		"StaleProvenanceReplaced": {
			reason: "Provenance that no longer holds (another ProviderConfig) is replaced, not kept beside the new.",
			own:    provided, observed: with(map[string]string{"crossplane-providerconfig": "old"}),
			want: provided,
		},
		"EmptySpec": {
			reason: "spec.labels {} removes the user's labels but keeps the provided ones.",
			spec:   map[string]string{}, own: provided, observed: with(map[string]string{"env": "prod"}),
			want: provided,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := wantLabels(tc.spec, tc.own, policy(func(p *compute.SecurityPolicy) { p.Labels = tc.observed }))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nwantLabels(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestProvidedLabelsAreDesired: labels the provider adds count as desired
// state, so a policy that carries them is up to date and the next Observe
// does not write again.
func TestProvidedLabelsAreDesired(t *testing.T) {
	cases := map[string]struct {
		reason   string
		spec     map[string]string
		observed map[string]string
		want     bool // PlanPolicy(...).Labels: setLabels needed
	}{
		"AllPresent": {
			reason: "spec.labels and the provided labels in GCP: nothing to do.",
			spec:   map[string]string{"env": "prod"}, observed: with(map[string]string{"env": "prod"}),
		},
		"AllPresentDontCare": {
			reason:   "Without spec.labels, GCP's own labels beside the provided ones are no drift.",
			observed: with(map[string]string{"team": "console"}),
		},
		"ProvenanceMissing": {
			reason: "A policy labelled before provenance labels existed gets them, once.",
			spec:   map[string]string{"env": "prod"}, observed: map[string]string{"env": "prod", ownerKey: provided[ownerKey]},
			want: true,
		},
		"ProvenanceStale": {
			reason:   "A provenance label that names another ProviderConfig is drift.",
			observed: with(map[string]string{"crossplane-providerconfig": "old"}),
			want:     true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sp := policy(func(p *compute.SecurityPolicy) { p.Labels = tc.observed })
			d := PlanPolicy(v1beta1.SecurityPolicyParameters{Labels: tc.spec}, sp, Ownership{Labels: provided})
			if diff := cmp.Diff(tc.want, d.Labels); diff != "" {
				t.Errorf("\n%s\nPlanPolicy(...).Labels: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
