package gcpgroup

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/networksecurity/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

func ptr[T any](v T) *T { return &v }

func TestPlanGroup(t *testing.T) {
	own := map[string]string{"armorplane-owner": "abc"}
	base := func(items ...string) v1alpha1.AddressGroupParameters {
		return v1alpha1.AddressGroupParameters{Type: "IPV4", Capacity: 10, Purpose: []string{"CLOUD_ARMOR"}, Items: items}
	}
	observed := func(items ...string) *networksecurity.AddressGroup {
		return &networksecurity.AddressGroup{Type: "IPV4", Capacity: 10, Purpose: []string{"CLOUD_ARMOR"}, Items: items, Labels: map[string]string{"armorplane-owner": "abc"}}
	}
	cases := map[string]struct {
		reason   string
		p        v1alpha1.AddressGroupParameters
		observed *networksecurity.AddressGroup
		want     Plan
		upToDate bool
	}{
		"Same": {
			reason:   "A group holding exactly the items, in another order and form, is up to date.",
			p:        base("10.0.0.1", "192.168.0.0/24"),
			observed: observed("192.168.0.0/24", "10.0.0.1/32"),
			upToDate: true,
		},
		"OneAdded": {
			reason:   "One new item is one add, as the spec writes it.",
			p:        base("10.0.0.1", "10.0.0.2"),
			observed: observed("10.0.0.1/32"),
			want:     Plan{Add: []string{"10.0.0.2"}},
		},
		"OneRemoved": {
			reason:   "An item gone from the spec is removed as GCP reports it.",
			p:        base("10.0.0.1"),
			observed: observed("10.0.0.1/32", "10.0.0.9/32"),
			want:     Plan{Remove: []string{"10.0.0.9/32"}},
		},
		"DuplicatesInSpec": {
			reason:   "An item listed twice (in two forms) is added once.",
			p:        base("10.0.0.2", "10.0.0.2/32"),
			observed: observed(),
			want:     Plan{Add: []string{"10.0.0.2"}},
		},
		"OwnerLabelMissing": {
			reason:   "A group without the owner label is patched to carry it; labels of others stay.",
			p:        base(),
			observed: &networksecurity.AddressGroup{Type: "IPV4", Capacity: 10, Purpose: []string{"CLOUD_ARMOR"}, Labels: map[string]string{"team": "x"}},
			want:     Plan{Patch: []string{"labels"}},
		},
		"Description": {
			reason:   "A changed description is patched.",
			p:        func() v1alpha1.AddressGroupParameters { p := base(); p.Description = ptr("new"); return p }(),
			observed: observed(),
			want:     Plan{Patch: []string{"description"}},
		},
		"Immutable": {
			reason:   "Type, capacity and purpose cannot change in GCP: reported, not planned.",
			p:        v1alpha1.AddressGroupParameters{Type: "IPV6", Capacity: 20, Purpose: []string{"DEFAULT"}},
			observed: observed(),
			want:     Plan{Immutable: []string{"type (GCP has IPV4)", "capacity (GCP has 10)", "purpose (GCP has CLOUD_ARMOR)"}},
			upToDate: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := PlanGroup(tc.p, own, tc.observed)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nPlanGroup(...): -want, +got:\n%s", tc.reason, diff)
			}
			if got.UpToDate() != tc.upToDate {
				t.Errorf("%s\nUpToDate(): want %t, got %t", tc.reason, tc.upToDate, got.UpToDate())
			}
		})
	}
}

func TestPatchBody(t *testing.T) {
	p := v1alpha1.AddressGroupParameters{Description: ptr(""), Labels: map[string]string{"env": "prod", "armorplane-owner": "user-tried"}}
	observed := &networksecurity.AddressGroup{Labels: map[string]string{"team": "x", "env": "dev"}}
	got := PatchBody(p, map[string]string{"armorplane-owner": "abc"}, observed)
	want := &networksecurity.AddressGroup{
		ForceSendFields: []string{"Description"},
		Labels:          map[string]string{"team": "x", "env": "prod", "armorplane-owner": "abc"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PatchBody: the wanted labels over GCP's, the owner label winning, an emptied description sent: -want, +got:\n%s", diff)
	}
}

func TestCanonical(t *testing.T) {
	cases := map[string]string{
		"10.0.0.1":        "10.0.0.1/32",
		" 10.0.0.0/24 ":   "10.0.0.0/24",
		"10.0.0.7/24":     "10.0.0.0/24",
		"::ffff:10.0.0.1": "10.0.0.1/32",
		"2001:db8::1":     "2001:db8::1/128",
		"2001:db8::/32":   "2001:db8::/32",
		"not-an-address":  "not-an-address",
	}
	for in, want := range cases {
		if got := Canonical(in); got != want {
			t.Errorf("Canonical(%q): want %q, got %q", in, want, got)
		}
	}
}

func TestLabels(t *testing.T) {
	own := map[string]string{"armorplane-owner": "abc", "crossplane-kind": "addressgroup_cloudarmor_armorplane_io",
		"crossplane-name": "office", "crossplane-namespace": "team-a"}
	cases := map[string]struct {
		reason string
		user   map[string]string
		own    map[string]string
		want   map[string]string
	}{
		"None": {
			reason: "No labels at all are sent as none.",
		},
		"ProvidedOnly": {
			reason: "A group without spec labels carries the owner and provenance labels.",
			own:    own,
			want:   own,
		},
		"Merged": {
			reason: "The user's labels and the provided ones are merged.",
			user:   map[string]string{"env": "prod"},
			own:    own,
			want: map[string]string{"env": "prod", "armorplane-owner": "abc", "crossplane-kind": "addressgroup_cloudarmor_armorplane_io",
				"crossplane-name": "office", "crossplane-namespace": "team-a"},
		},
		"ProvidedWin": {
			reason: "A user label with a provided key (admission refuses it) loses to the provider's.",
			user:   map[string]string{"crossplane-namespace": "team-b"},
			own:    own,
			want:   own,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Labels(tc.user, tc.own)); diff != "" {
				t.Errorf("\n%s\nLabels(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	t.Run("HeldIsUpToDate", func(t *testing.T) {
		p := v1alpha1.AddressGroupParameters{Type: "IPV4", Capacity: 10, Purpose: []string{"CLOUD_ARMOR"}}
		observed := &networksecurity.AddressGroup{Type: "IPV4", Capacity: 10, Purpose: []string{"CLOUD_ARMOR"},
			Labels: Labels(map[string]string{"team": "console"}, own)}
		if got := PlanGroup(p, own, observed); !got.UpToDate() {
			t.Errorf("a group carrying the provided labels (and one of GCP's) is not up to date: %+v; every Observe would write again", got)
		}
	})
}
