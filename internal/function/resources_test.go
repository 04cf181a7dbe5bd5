package function

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"
)

func TestNATSource(t *testing.T) {
	cases := map[string]struct {
		reason string
		src    NATSource
		want   map[string]any
	}{
		"Router": {
			reason: "One NAT of one router, as the spec names it; unset fields left out.",
			src:    NATSource{Name: "egress", Region: "us-central1", Router: "egress", NAT: "egress-nat", PollSeconds: ptr.To[int64](30)},
			want: map[string]any{"name": "egress", "nat": map[string]any{
				"region": "us-central1", "router": "egress", "nat": "egress-nat", "pollSeconds": int64(30)}},
		},
		"Network": {
			reason: "Every router of a network, its project, hold and required passed on.",
			src: NATSource{Name: "vpc", Project: "host", Network: "vpc", Regions: []string{"us-central1", "europe-west1"},
				Required: true, ShrinkHoldSeconds: ptr.To[int64](0)},
			want: map[string]any{"name": "vpc", "required": true, "nat": map[string]any{
				"project": "host", "network": "vpc", "regions": []any{"us-central1", "europe-west1"}, "shrinkHoldSeconds": int64(0)}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, natSource(tc.src)); diff != "" {
				t.Errorf("\n%s\nnatSource(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
