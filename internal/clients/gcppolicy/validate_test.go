package gcppolicy

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// fakeValidator records the dry runs asked of it, as "insert 10,2147483647",
// "addRule 10" or "patchRule 10 mask=action"; refuse answers the call it
// names.
type fakeValidator struct {
	observed *compute.SecurityPolicy // nil: GCP has no such policy
	getErr   error
	refuse   map[string]error
	asked    []string
}

func (f *fakeValidator) Get(_ context.Context, _ string) (*compute.SecurityPolicy, error) {
	if f.getErr != nil {
		return nil, f.getErr
	}
	if f.observed == nil {
		return nil, &googleapi.Error{Code: http.StatusNotFound}
	}
	return f.observed, nil
}

func (f *fakeValidator) answer(call string) error {
	f.asked = append(f.asked, call)
	return f.refuse[call]
}

func (f *fakeValidator) ValidateInsert(_ context.Context, p *compute.SecurityPolicy) error {
	prios := make([]string, len(p.Rules))
	for i, r := range p.Rules {
		prios[i] = fmt.Sprint(r.Priority)
	}
	return f.answer("insert " + strings.Join(prios, ","))
}

func (f *fakeValidator) ValidateAddRule(_ context.Context, _ string, r *compute.SecurityPolicyRule) error {
	return f.answer(fmt.Sprintf("addRule %d", r.Priority))
}

func (f *fakeValidator) ValidatePatchRule(_ context.Context, _ string, prio int64, _ *compute.SecurityPolicyRule, mask ...string) error {
	return f.answer(fmt.Sprintf("patchRule %d mask=%s", prio, strings.Join(mask, ",")))
}

var _ gcp.PolicyValidator = &fakeValidator{}

var errInvalid = &googleapi.Error{Code: http.StatusBadRequest, Message: "no", Errors: []googleapi.ErrorItem{{Reason: "invalid"}}}

func TestValidatePolicy(t *testing.T) {
	params := v1beta1.SecurityPolicyParameters{
		Description: ptr("d"),
		DefaultRule: &v1beta1.RuleParameters{Action: deny403},
		Rules:       []v1beta1.PolicyRule{inlineRule(10, "allow", rangeA), inlineRule(20, "allow", rangeB)},
	}
	type want struct {
		unchecked []string
		err       error
		asked     []string
	}
	cases := map[string]struct {
		reason string
		v      *fakeValidator
		own    Ownership
		typ    string // spec.forProvider.type, if set
		want   want
	}{
		"NewPolicy": {
			reason: "A policy GCP lacks is asked about as the insert, without the rules SecurityPolicyRules claim.",
			v:      &fakeValidator{},
			own:    Ownership{Claims: Claims{20: claimant}},
			want:   want{asked: []string{"insert 10,2147483647"}},
		},
		"NewPolicyRefused": {
			reason: "GCP's refusal of the insert is a Refusal naming it.",
			v:      &fakeValidator{refuse: map[string]error{"insert 10,20,2147483647": errInvalid}},
			want:   want{err: &Refusal{Call: "insert", Err: errInvalid}, asked: []string{"insert 10,20,2147483647"}},
		},
		"ExistingPolicy": {
			reason: "For a policy GCP has, the rules the plan adds and patches and the default rule are asked about; the description change cannot be.",
			v:      &fakeValidator{observed: observed(nil, "old", denyRule(10, rangeA))},
			want: want{
				unchecked: []string{"the change of the policy's own fields: securityPolicies.patch has no validateOnly"},
				asked:     []string{"addRule 20", "patchRule 10 mask=action,match", "patchRule 2147483647 mask=action,match"},
			},
		},
		"ExistingPolicyRefused": {
			reason: "The first refusal stops the run and names the call.",
			v: &fakeValidator{observed: observed(nil, "d", denyRule(10, rangeA)),
				refuse: map[string]error{"addRule 20": errInvalid}},
			want: want{err: &Refusal{Call: "addRule priority 20", Err: errInvalid}, asked: []string{"addRule 20"}},
		},
		"TypeChange": {
			reason: "A type GCP's policy cannot change to is Unwritable, and nothing is asked.",
			v:      &fakeValidator{observed: policy(func(p *compute.SecurityPolicy) { p.Type = "CLOUD_ARMOR_EDGE" })},
			typ:    "CLOUD_ARMOR",
			want: want{err: &Unwritable{Reason: `spec.forProvider.type is "CLOUD_ARMOR" but GCP policy "edge" has type "CLOUD_ARMOR_EDGE"; ` +
				`type is immutable in GCP: delete the policy to recreate it with the new type, or set type to "CLOUD_ARMOR_EDGE"`}},
		},
		"CannotAsk": {
			reason: "An error that says nothing about the request is not a Refusal.",
			v:      &fakeValidator{getErr: &googleapi.Error{Code: http.StatusForbidden, Message: "denied"}},
			want:   want{err: &googleapi.Error{Code: http.StatusForbidden, Message: "denied"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := params
			if tc.typ != "" {
				p.Type = &tc.typ
			}
			unchecked, err := ValidatePolicy(context.Background(), tc.v, "edge", p, tc.own)
			got := want{unchecked: unchecked, err: err, asked: tc.v.asked}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), test.EquateErrors()); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestValidateRule(t *testing.T) {
	params := v1beta1.RuleParameters{Action: "allow", Match: specSrcIPs(rangeA)}
	pending := &compute.SecurityPolicy{Name: "edge", Rules: []*compute.SecurityPolicyRule{denyRule(10, rangeB), rule(defPrio, deny403)}}
	type want struct {
		err   error
		asked []string
	}
	cases := map[string]struct {
		reason  string
		v       *fakeValidator
		pending *compute.SecurityPolicy
		want    want
	}{
		"Add": {
			reason: "A priority the policy does not hold is asked about with addRule.",
			v:      &fakeValidator{observed: observed(nil, "")},
			want:   want{asked: []string{"addRule 10"}},
		},
		"Patch": {
			reason: "A priority holding another rule is asked about with patchRule and the provider's mask.",
			v:      &fakeValidator{observed: observed(nil, "", denyRule(10, rangeA))},
			want:   want{asked: []string{"patchRule 10 mask=action,match"}},
		},
		"UpToDate": {
			reason: "A rule GCP holds as desired needs no write, so nothing is asked.",
			v:      &fakeValidator{observed: observed(nil, "", rule(10, "allow", withMatch(srcIPs(rangeA))))},
		},
		"PendingPolicy": {
			reason:  "A rule of a policy GCP lacks but the manifests create is asked about inside its insert, in place of the rule at its priority.",
			v:       &fakeValidator{},
			pending: pending,
			want:    want{asked: []string{"insert 2147483647,10"}},
		},
		"NoPolicy": {
			reason: "A rule of a policy nobody creates is refused with GCP's 404.",
			v:      &fakeValidator{},
			want:   want{err: &Refusal{Call: "getting the policy", Err: &googleapi.Error{Code: http.StatusNotFound}}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := ValidateRule(context.Background(), tc.v, "edge", 10, params, tc.pending)
			got := want{err: err, asked: tc.v.asked}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), test.EquateErrors()); diff != "" {
				t.Errorf("%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	if len(pending.Rules) != 2 || pending.Rules[0].Priority != 10 {
		t.Errorf("ValidateRule changed the pending insert body: %+v", pending.Rules)
	}
}
