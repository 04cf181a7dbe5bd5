package fake

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

var errBoom = errors.New("boom")

func TestPolicyClient(t *testing.T) {
	type want struct {
		policy *compute.SecurityPolicy
		err    error
	}
	cases := map[string]struct {
		reason string
		c      *PolicyClient
		call   func(c *PolicyClient) (*compute.SecurityPolicy, error)
		want   want
	}{
		"GetFn": {
			reason: "Get calls GetFn.",
			c: &PolicyClient{GetFn: func(context.Context, string) (*compute.SecurityPolicy, error) {
				return &compute.SecurityPolicy{Name: "n"}, nil
			}},
			call: func(c *PolicyClient) (*compute.SecurityPolicy, error) { return c.Get(context.Background(), "n") },
			want: want{policy: &compute.SecurityPolicy{Name: "n"}},
		},
		"GetFreshFallsBack": {
			reason: "GetFresh falls back on GetFn.",
			c:      &PolicyClient{GetFn: func(context.Context, string) (*compute.SecurityPolicy, error) { return nil, errBoom }},
			call:   func(c *PolicyClient) (*compute.SecurityPolicy, error) { return c.GetFresh(context.Background(), "n") },
			want:   want{err: errBoom},
		},
		"PatchRuleFn": {
			reason: "PatchRule passes its arguments through.",
			c: &PolicyClient{PatchRuleFn: func(_ context.Context, _ string, priority int64, _ *compute.SecurityPolicyRule, mask ...string) error {
				if priority != 7 || len(mask) != 1 {
					return errBoom
				}
				return nil
			}},
			call: func(c *PolicyClient) (*compute.SecurityPolicy, error) {
				return nil, c.PatchRule(context.Background(), "n", 7, &compute.SecurityPolicyRule{}, "description")
			},
			want: want{},
		},
		"Unset": {
			reason: "An unset Fn returns nil values.",
			c:      &PolicyClient{},
			call: func(c *PolicyClient) (*compute.SecurityPolicy, error) {
				return nil, errors.Join(c.Insert(context.Background(), nil), c.Delete(context.Background(), "n"),
					c.AddRule(context.Background(), "n", nil), c.RemoveRule(context.Background(), "n", 0),
					c.Patch(context.Background(), "n", nil), c.SetLabels(context.Background(), "n", nil, ""))
			},
			want: want{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p, err := tc.call(tc.c)
			if diff := cmp.Diff(tc.want, want{policy: p, err: err}, cmp.AllowUnexported(want{}), test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
