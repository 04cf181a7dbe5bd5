package gcppolicy

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

func TestRecord(t *testing.T) {
	ranges := func(rs ...v1beta1.IPRange) v1beta1.RuleParameters {
		return v1beta1.RuleParameters{Action: "deny(403)", Match: &v1beta1.RuleMatcher{VersionedExpr: ptrTo("SRC_IPS_V1"),
			Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: rs}}}
	}
	a, b := ranges("192.0.2.0/24"), ranges("198.51.100.0/24")
	empty := &compute.SecurityPolicy{Name: "p", Rules: []*compute.SecurityPolicyRule{GenerateDefaultRule(v1beta1.RuleParameters{Action: "allow"})}}
	withA := &compute.SecurityPolicy{Name: "p", Rules: append([]*compute.SecurityPolicyRule{GenerateRule(10, a)}, empty.Rules...)}
	rule := func(sp *compute.SecurityPolicy, p v1beta1.RuleParameters) func(context.Context, gcp.PolicyValidator) error {
		return func(ctx context.Context, v gcp.PolicyValidator) error {
			return ValidateRuleAgainst(ctx, v, "p", sp, 10, p)
		}
	}
	policy := func(sp *compute.SecurityPolicy, p v1beta1.RuleParameters) func(context.Context, gcp.PolicyValidator) error {
		return func(ctx context.Context, v gcp.PolicyValidator) error {
			_, err := ValidatePolicyAgainst(ctx, v, "p", sp, v1beta1.SecurityPolicyParameters{Rules: []v1beta1.PolicyRule{{Priority: 10, RuleParameters: p}}}, Ownership{})
			return err
		}
	}
	record := func(ask func(context.Context, gcp.PolicyValidator) error) Requests {
		t.Helper()
		r, err := Record(context.Background(), ask)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	type want struct {
		calls []string
		same  bool // hashes as the reference does
	}
	reference := record(rule(empty, a))
	cases := map[string]struct {
		reason string
		ask    func(context.Context, gcp.PolicyValidator) error
		want   want
	}{
		"Same": {
			reason: "The same request hashes the same: a dry run does not ask again.",
			ask:    rule(empty, a),
			want:   want{calls: []string{"addRule priority 10"}, same: true},
		},
		"OtherBody": {
			reason: "Another body is another request.",
			ask:    rule(empty, b),
			want:   want{calls: []string{"addRule priority 10"}},
		},
		"OtherCall": {
			reason: "What GCP holds decides the call: a patch of the rule is another request.",
			ask:    rule(withA, b),
			want:   want{calls: []string{"patchRule priority 10"}},
		},
		"Insert": {
			reason: "A policy GCP does not have is one insert.",
			ask:    policy(nil, a),
			want:   want{calls: []string{"insert"}},
		},
		"Nothing": {
			reason: "A rule GCP holds as desired asks nothing.",
			ask:    rule(withA, a),
			want:   want{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := record(tc.ask)
			if diff := cmp.Diff(tc.want.calls, got.Calls); diff != "" {
				t.Errorf("\n%s\nRecord(...).Calls: -want, +got:\n%s", tc.reason, diff)
			}
			if same := got.Hash == reference.Hash; same != tc.want.same {
				t.Errorf("\n%s\nRecord(...).Hash = %s, same as the reference's (%s): %t, want %t", tc.reason, got.Hash, reference.Hash, same, tc.want.same)
			}
		})
	}
}

func TestRefusalMessage(t *testing.T) {
	cases := map[string]struct {
		reason string
		err    error
		want   string
	}{
		"GoogleAPI": {
			reason: "GCP's own message, without the client's framing, on one line.",
			err:    &googleapi.Error{Code: http.StatusBadRequest, Message: "Invalid value for field 'resource.match.expr.expression':\n 'x'."},
			want:   "Invalid value for field 'resource.match.expr.expression': 'x'.",
		},
		"Operation": {
			reason: "A failed operation's error, as GCP sent it.",
			err:    &gcp.OperationError{Errors: []gcp.OperationErrorItem{{Code: "INVALID", Message: "bad"}}},
			want:   (&gcp.OperationError{Errors: []gcp.OperationErrorItem{{Code: "INVALID", Message: "bad"}}}).Error(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := (&Refusal{Call: "addRule priority 10", Err: tc.err}).Message()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nMessage(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func ptrTo[T any](v T) *T { return &v }
