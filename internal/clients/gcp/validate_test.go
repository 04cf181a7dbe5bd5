package gcp

import (
	"context"
	"net/http"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
)

func TestPolicyValidator(t *testing.T) {
	type args struct {
		region string
		call   func(ctx context.Context, v PolicyValidator) error
	}
	type want struct {
		err    error
		seen   []string
		bodies []string
	}
	rule := &compute.SecurityPolicyRule{Priority: 0, Action: "allow"}
	cases := map[string]struct {
		reason string
		routes routes
		args   args
		want   want
	}{
		"InsertDryRun": {
			reason: "ValidateInsert sends validateOnly=true and does not wait for the operation it gets.",
			routes: routes{"POST /global/securityPolicies": {ok(opJSON("op-1", "DONE"))}},
			args: args{call: func(ctx context.Context, v PolicyValidator) error {
				return v.ValidateInsert(ctx, &compute.SecurityPolicy{Name: "n"})
			}},
			want: want{seen: []string{"POST /global/securityPolicies?validateOnly=true"}, bodies: []string{`{"name":"n"}`}},
		},
		"AddRuleRefused": {
			reason: "A refusal is returned as GCP sent it; priority 0 is sent.",
			routes: routes{"POST " + policyPath + "/addRule": {{status: http.StatusBadRequest, body: errJSON(400, "invalid", "no")}}},
			args:   args{call: func(ctx context.Context, v PolicyValidator) error { return v.ValidateAddRule(ctx, "n", rule) }},
			want: want{
				err:    apiErr(400, "invalid", "no"),
				seen:   []string{"POST " + policyPath + "/addRule?validateOnly=true"},
				bodies: []string{`{"action":"allow","priority":0}`},
			},
		},
		"PatchRuleFailedOperation": {
			reason: "An answer that is a failed operation is a refusal.",
			routes: routes{"POST " + regionalPath + "/patchRule": {ok(opErrorJSON("op-1", "QUOTA_EXCEEDED", "Quota"))}},
			args: args{region: "r", call: func(ctx context.Context, v PolicyValidator) error {
				return v.ValidatePatchRule(ctx, "n", 10, rule, "action", "match")
			}},
			want: want{
				err:    &OperationError{Operation: "op-1", Errors: []OperationErrorItem{{Code: "QUOTA_EXCEEDED", Message: "Quota"}}},
				seen:   []string{"POST " + regionalPath + "/patchRule?priority=10&updateMask=action%2Cmatch&validateOnly=true"},
				bodies: []string{`{"action":"allow","priority":10}`},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, svc := newFakeGCP(t, tc.routes)
			c := NewClient(svc, nil, nil, fastWait)
			err := tc.args.call(context.Background(), c.Validator("p", tc.args.region))
			seen, bodies := f.log()
			got := want{err: err, seen: seen, bodies: bodies}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
