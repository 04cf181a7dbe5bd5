package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/networksecurity/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcpgroup"
)

// 11. An AddressGroup's items reach GCP; an item changed is one addItems and
// one removeItems, never a rewrite; an item removed behind the provider's
// back comes back within a poll; the rules that use the group show in its
// status; a group another owner labelled is refused and survives the
// object's deletion; deleting the object deletes its own group.
func (s *suite) testAddressGroup(t *testing.T) {
	ctx := context.Background()
	ns, err := s.emu.NewNetworkSecurityServiceWithToken(ctx, exampleToken)
	if err != nil {
		t.Fatal(err)
	}
	groups := ns.Projects.Locations.AddressGroups
	path := func(name string) string { return "projects/" + s.project + "/locations/global/addressGroups/" + name }
	items := func(name string) ([]string, error) {
		g, err := groups.Get(path(name)).Do()
		if err != nil {
			return nil, err
		}
		// GCP keeps items as they were sent ("10.1.0.1", not
		// "10.1.0.1/32"); compared as ranges.
		out := make([]string, 0, len(g.Items))
		for _, it := range g.Items {
			out = append(out, gcpgroup.Canonical(it))
		}
		slices.Sort(out)
		return out, nil
	}
	waitItems := func(name string, want ...string) {
		t.Helper()
		slices.Sort(want)
		s.eventually(t, waitFor, "address group "+name+" to hold "+strings.Join(want, ","), func() error {
			got, err := items(name)
			if err != nil {
				return err
			}
			if diff := cmp.Diff(want, got); diff != "" {
				return fmt.Errorf("-want, +got:\n%s", diff)
			}
			return nil
		})
	}

	cr := &v1alpha1.AddressGroup{ObjectMeta: metav1.ObjectMeta{Name: "e2e-group", Namespace: s.ns}}
	cr.Spec.ForProvider = v1alpha1.AddressGroupParameters{Type: "IPV4", Capacity: 10, Items: []string{"10.1.0.1", "10.1.0.2", "10.1.1.0/24"}}
	s.create(t, cr)
	s.waitReady(t, cr)
	waitItems("e2e-group", "10.1.0.1/32", "10.1.0.2/32", "10.1.1.0/24")
	g, err := groups.Get(path("e2e-group")).Do()
	if err != nil {
		t.Fatal(err)
	}
	if g.Labels["armorplane-owner"] == "" || !slices.Equal(g.Purpose, []string{"CLOUD_ARMOR"}) {
		t.Errorf("GCP group: want the owner label and purpose CLOUD_ARMOR, got labels %v purpose %v", g.Labels, g.Purpose)
	}
	s.checkProvenance(t, cr, g.Labels)

	before := s.emu.Stats().Methods
	s.update(t, cr, func() { cr.Spec.ForProvider.Items = []string{"10.1.0.1", "10.1.0.3", "10.1.1.0/24"} })
	waitItems("e2e-group", "10.1.0.1/32", "10.1.0.3/32", "10.1.1.0/24")
	s.waitReady(t, cr)
	after := s.emu.Stats().Methods
	writes := map[string]int64{}
	for _, m := range []string{"addressGroups.addItems", "addressGroups.removeItems", "addressGroups.patch", "addressGroups.create", "addressGroups.delete"} {
		if n := after[m] - before[m]; n > 0 {
			writes[m] = n
		}
	}
	if diff := cmp.Diff(map[string]int64{"addressGroups.addItems": 1, "addressGroups.removeItems": 1}, writes); diff != "" {
		t.Errorf("one item replaced: want one addItems and one removeItems, nothing else: -want, +got:\n%s", diff)
	}

	// Drift: an item removed in GCP comes back.
	op, err := groups.RemoveItems(path("e2e-group"), &networksecurity.RemoveAddressGroupItemsRequest{Items: []string{"10.1.0.3"}}).Do()
	if err != nil {
		t.Fatalf("direct GCP removeItems: %v (operation %v)", err, op)
	}
	// The provider sees it at its next poll: the removal is seen first,
	// then its repair.
	waitItems("e2e-group", "10.1.0.1/32", "10.1.1.0/24")
	waitItems("e2e-group", "10.1.0.3/32", "10.1.0.1/32", "10.1.1.0/24")

	// The example's rule uses the "partners" group (testExamples applied it).
	partners := &v1alpha1.AddressGroup{ObjectMeta: metav1.ObjectMeta{Name: "partners", Namespace: s.ns}}
	s.eventually(t, 2*poll+5*time.Second, "AddressGroup partners to list the rule that uses it", func() error {
		s.get(t, partners)
		for _, r := range partners.Status.AtProvider.References {
			if strings.HasSuffix(r.SecurityPolicy, "/securityPolicies/partner-api") && r.RulePriority == 1000 {
				return nil
			}
		}
		return fmt.Errorf("references %+v", partners.Status.AtProvider.References)
	})

	// A group labelled by another owner is never written, and survives.
	if _, err := groups.Create("projects/"+s.project+"/locations/global", &networksecurity.AddressGroup{
		Type: "IPV4", Capacity: 5, Purpose: []string{"CLOUD_ARMOR"}, Items: []string{"10.9.0.1"},
		Labels: map[string]string{"armorplane-owner": "another-cluster"},
	}).AddressGroupId("e2e-foreign").Do(); err != nil {
		t.Fatalf("direct GCP create: %v", err)
	}
	s.eventually(t, 10*time.Second, "the foreign group to exist", func() error { _, err := items("e2e-foreign"); return err })
	foreign := &v1alpha1.AddressGroup{ObjectMeta: metav1.ObjectMeta{Name: "e2e-foreign", Namespace: s.ns}}
	foreign.Spec.ForProvider = v1alpha1.AddressGroupParameters{Type: "IPV4", Capacity: 5, Items: []string{"10.9.0.2"}}
	s.create(t, foreign)
	s.waitCondition(t, foreign, "to refuse a group another owner labelled", func(c map[string]condition) error {
		if c["Synced"].Status != "False" || !strings.Contains(c["Synced"].Message, "carries the label armorplane-owner=another-cluster") {
			return fmt.Errorf("Synced=%s", c["Synced"])
		}
		return nil
	})
	s.delete(t, foreign)
	s.waitGone(t, foreign)
	waitItems("e2e-foreign", "10.9.0.1/32")

	s.delete(t, cr)
	s.waitGone(t, cr)
	if _, err := items("e2e-group"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("GCP group after its object was deleted: want 404, got %v", err)
	}
	if meta.GetExternalName(cr) != "e2e-group" {
		t.Errorf("external name: want the object's name, got %q", meta.GetExternalName(cr))
	}
}
