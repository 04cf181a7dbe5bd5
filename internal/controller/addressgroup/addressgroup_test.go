package addressgroup

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/networksecurity/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// fakeGroups is one GCP address group and the writes made to it.
type fakeGroups struct {
	group *networksecurity.AddressGroup // nil: not found
	refs  []*networksecurity.ListAddressGroupReferencesResponseAddressGroupReference
	calls []string
}

func (f *fakeGroups) Get(_ context.Context, _ gcp.GroupKey) (*networksecurity.AddressGroup, error) {
	if f.group == nil {
		return nil, &googleapi.Error{Code: http.StatusNotFound}
	}
	return f.group, nil
}

func (f *fakeGroups) References(context.Context, gcp.GroupKey) ([]*networksecurity.ListAddressGroupReferencesResponseAddressGroupReference, error) {
	return f.refs, nil
}

func (f *fakeGroups) Create(_ context.Context, _ gcp.GroupKey, g *networksecurity.AddressGroup) error {
	f.calls = append(f.calls, "create "+strings.Join(g.Items, ","))
	return nil
}

func (f *fakeGroups) Patch(_ context.Context, _ gcp.GroupKey, _ *networksecurity.AddressGroup, mask string) error {
	f.calls = append(f.calls, "patch "+mask)
	return nil
}

func (f *fakeGroups) AddItems(_ context.Context, _ gcp.GroupKey, items []string) error {
	f.calls = append(f.calls, "add "+strings.Join(items, ","))
	return nil
}

func (f *fakeGroups) RemoveItems(_ context.Context, _ gcp.GroupKey, items []string) error {
	f.calls = append(f.calls, "remove "+strings.Join(items, ","))
	return nil
}

func (f *fakeGroups) Delete(context.Context, gcp.GroupKey) error {
	f.calls = append(f.calls, "delete")
	return nil
}

const ours = "ours"

func group(items ...string) *networksecurity.AddressGroup {
	return &networksecurity.AddressGroup{Type: "IPV4", Capacity: 4, Purpose: []string{"CLOUD_ARMOR"}, Items: items,
		Labels: map[string]string{"armorplane-owner": ours}}
}

func object(items ...string) *v1alpha1.AddressGroup {
	cr := &v1alpha1.AddressGroup{ObjectMeta: metav1.ObjectMeta{Name: "office", Namespace: "team-a"}}
	cr.Spec.ForProvider = v1alpha1.AddressGroupParameters{Type: "IPV4", Capacity: 4, Purpose: []string{"CLOUD_ARMOR"}, Items: items}
	meta.SetExternalName(cr, "office")
	return cr
}

func TestObserve(t *testing.T) {
	foreign := group("10.0.0.1")
	foreign.Labels["armorplane-owner"] = "theirs"
	deleting := object("10.0.0.1")
	now := metav1.Now()
	deleting.SetDeletionTimestamp(&now)
	wrongType := group()
	wrongType.Type = "IPV6"

	cases := map[string]struct {
		reason  string
		group   *networksecurity.AddressGroup
		cr      *v1alpha1.AddressGroup
		want    managed.ExternalObservation
		wantErr string
	}{
		"Missing": {
			reason: "A group GCP does not have does not exist.",
			cr:     object("10.0.0.1"),
			want:   managed.ExternalObservation{ResourceExists: false},
		},
		"UpToDate": {
			reason: "A group holding the spec's items and our label is up to date.",
			group:  group("10.0.0.1/32"),
			cr:     object("10.0.0.1"),
			want:   managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true},
		},
		"ItemMissing": {
			reason: "A group lacking an item needs an update.",
			group:  group("10.0.0.1/32"),
			cr:     object("10.0.0.1", "10.0.0.2"),
			want:   managed.ExternalObservation{ResourceExists: true, Diff: "add 1 item(s)"},
		},
		"Foreign": {
			reason:  "A group another object owns is refused, never written.",
			group:   foreign,
			cr:      object("10.0.0.1"),
			wantErr: "carries the label armorplane-owner=theirs",
		},
		"ForeignWhileDeleting": {
			reason: "Deleting an object that does not own its group reports the group gone, so it stays in GCP.",
			group:  foreign,
			cr:     deleting,
			want:   managed.ExternalObservation{ResourceExists: false},
		},
		"Immutable": {
			reason:  "A type GCP cannot change is reported, not rewritten.",
			group:   wrongType,
			cr:      object(),
			wantErr: "differs in fields GCP cannot change: type (GCP has IPV6)",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeGroups{group: tc.group}
			e := &external{groups: f, key: gcp.GroupKey{Parent: "projects/p", Location: "global", Name: "office"}, labels: map[string]string{"armorplane-owner": ours}}
			got, err := e.Observe(context.Background(), tc.cr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nObserve(...): want error containing %q, got %v", tc.reason, tc.wantErr, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s\nObserve(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if len(f.calls) > 0 {
				t.Errorf("%s\nObserve wrote to GCP: %v", tc.reason, f.calls)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	cases := map[string]struct {
		reason    string
		group     *networksecurity.AddressGroup
		cr        *v1alpha1.AddressGroup
		wantCalls []string
		wantErr   string
	}{
		"AddBeforeRemove": {
			reason:    "With room, the new item is added before the old one goes: no moment without either.",
			group:     group("10.0.0.1/32", "10.0.0.2/32"),
			cr:        object("10.0.0.1", "10.0.0.3"),
			wantCalls: []string{"add 10.0.0.3", "remove 10.0.0.2/32"},
		},
		"RemoveToMakeRoom": {
			reason:    "A full group first loses just as many items as the adds need room for.",
			group:     group("10.0.0.1/32", "10.0.0.2/32", "10.0.0.3/32", "10.0.0.4/32"),
			cr:        object("10.0.0.1", "10.0.0.5", "10.0.0.6"),
			wantCalls: []string{"remove 10.0.0.2/32,10.0.0.3/32", "add 10.0.0.5,10.0.0.6", "remove 10.0.0.4/32"},
		},
		"LabelAndItems": {
			reason:    "An adopted group gets its items and then our label.",
			group:     &networksecurity.AddressGroup{Type: "IPV4", Capacity: 4, Purpose: []string{"CLOUD_ARMOR"}},
			cr:        object("10.0.0.1"),
			wantCalls: []string{"add 10.0.0.1", "patch labels"},
		},
		"OverCapacity": {
			reason:  "More distinct items than the capacity is refused before any call.",
			group:   group(),
			cr:      object("10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"),
			wantErr: "holds at most 4 items, and the spec lists 5",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakeGroups{group: tc.group}
			e := &external{groups: f, key: gcp.GroupKey{Parent: "projects/p", Location: "global", Name: "office"}, labels: map[string]string{"armorplane-owner": ours}}
			_, err := e.Update(context.Background(), tc.cr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nUpdate(...): want error containing %q, got %v", tc.reason, tc.wantErr, err)
				}
			} else if err != nil {
				t.Fatalf("%s\nUpdate(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.wantCalls, f.calls, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nGCP calls: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.wantErr == "" && tc.cr.Status.AtProvider.ItemCount != len(tc.cr.Spec.ForProvider.Items) {
				t.Errorf("%s\nstatus.atProvider.itemCount: want %d (what GCP now holds), got %d", tc.reason, len(tc.cr.Spec.ForProvider.Items), tc.cr.Status.AtProvider.ItemCount)
			}
		})
	}
}

func TestKey(t *testing.T) {
	org := object()
	org.Spec.ForProvider.Organization = new("123")
	org.Spec.ForProvider.Location = "us-central1"
	cases := map[string]struct {
		cr   *v1alpha1.AddressGroup
		want string
	}{
		"Project":      {cr: object(), want: "projects/p/locations/global/addressGroups/office"},
		"Organization": {cr: org, want: "organizations/123/locations/us-central1/addressGroups/office"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := Key(tc.cr, "p").String(); got != tc.want {
				t.Errorf("Key(...): want %s, got %s", tc.want, got)
			}
		})
	}
}
