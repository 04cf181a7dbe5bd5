package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// 13. A NetworkEdgeSecurityService applies a CLOUD_ARMOR_NETWORK policy it
// references by securityPolicyRef: Ready with GCP holding the policy's URL;
// a new description is one patch and nothing else; in a project on Cloud
// Armor Standard GCP refuses the service, which shows in Synced=False with
// GCP's message, retried with backoff (no hot loop), and created once the
// project is enrolled; a service made elsewhere is refused (and left in
// place) by an object that may create, kept by one whose
// managementPolicies are [Observe, Update] (and left when it is deleted),
// and owned outright by one carrying crossplane.io/external-create-succeeded;
// deleting the objects deletes the services.
func (s *suite) testNetworkEdgeSecurityService(t *testing.T) {
	const (
		region   = "us-east4"
		standard = "e2e-standard-tier" // a project on CA_STANDARD, the emulator's default
	)
	networkPolicy := func(name string, project *string) *v1beta1.SecurityPolicy {
		return armor.NewPolicy(name, func(p *v1beta1.SecurityPolicyParameters) {
			p.Project = project
			p.Region = armor.Ptr(region)
			p.Type = armor.Ptr("CLOUD_ARMOR_NETWORK")
			p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)", NetworkMatch: &v1beta1.RuleNetworkMatcher{SrcIpRanges: []v1beta1.IPRange{"*"}}}
		})
	}
	service := func(name, policy string, project *string) *v1alpha1.NetworkEdgeSecurityService {
		cr := &v1alpha1.NetworkEdgeSecurityService{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: armor.Namespace}}
		cr.Spec.ForProvider = v1alpha1.NetworkEdgeSecurityServiceParameters{Project: project, Region: region, Description: armor.Ptr("first"),
			SecurityPolicyRef: &xpv2.NamespacedReference{Name: policy}}
		return cr
	}
	gcpService := func(project, name string) (*compute.NetworkEdgeSecurityService, error) {
		return s.gcp.NetworkEdgeSecurityServices.Get(project, region, name).Do()
	}
	writes := func() map[string]int64 {
		out := map[string]int64{}
		for m, n := range s.emu.Stats().Methods {
			// Reads are not writes: .get, and the aggregatedList a
			// CLOUD_ARMOR_NETWORK policy makes each poll for Attached.
			if strings.HasPrefix(m, "networkEdgeSecurityServices.") && !strings.HasSuffix(m, ".get") && !strings.HasSuffix(m, ".aggregatedList") {
				out[m] = n
			}
		}
		return out
	}
	delta := func(before, after map[string]int64) map[string]int64 {
		out := map[string]int64{}
		for m, n := range after {
			if d := n - before[m]; d > 0 {
				out[m] = d
			}
		}
		return out
	}

	sp, cr := networkPolicy("e2e-edge-net", nil), service("e2e-edge", "e2e-edge-net", nil)
	s.create(t, sp, cr)
	s.waitReady(t, sp)
	s.waitReady(t, cr)
	s.get(t, cr)
	if got := ptr.Deref(cr.Spec.ForProvider.SecurityPolicy, ""); got != "e2e-edge-net" {
		t.Errorf("spec.forProvider.securityPolicy: want the reference resolved to e2e-edge-net, got %q", got)
	}
	es, err := gcpService(s.project, "e2e-edge")
	if err != nil {
		t.Fatal(err)
	}
	wantPolicy := "https://www.googleapis.com/compute/v1/projects/" + s.project + "/regions/" + region + "/securityPolicies/e2e-edge-net"
	if es.SecurityPolicy != wantPolicy || es.Description != "first" {
		t.Errorf("GCP service: want securityPolicy %s and description first, got %q and %q", wantPolicy, es.SecurityPolicy, es.Description)
	}
	if at := cr.Status.AtProvider; at.SecurityPolicy != wantPolicy || at.Fingerprint == "" || at.ID == "" || at.SelfLink == "" {
		t.Errorf("status.atProvider: want the policy's URL, a fingerprint, an id and a selfLink, got %+v", at)
	}

	// A new description: one patch, then quiet over two polls.
	before := writes()
	s.update(t, cr, func() { cr.Spec.ForProvider.Description = armor.Ptr("second") })
	s.eventually(t, waitFor, "GCP service description to be second", func() error {
		es, err := gcpService(s.project, "e2e-edge")
		if err != nil {
			return err
		}
		if es.Description != "second" {
			return fmt.Errorf("description %q", es.Description)
		}
		return nil
	})
	time.Sleep(2 * poll)
	if diff := cmp.Diff(map[string]int64{"networkEdgeSecurityServices.patch": 1}, delta(before, writes())); diff != "" {
		t.Errorf("a new description: want one patch and no other write: -want, +got:\n%s", diff)
	}

	// Cloud Armor Standard: GCP refuses the service, with its message.
	stdPolicy, stdService := networkPolicy("e2e-edge-std-net", armor.Ptr(standard)), service("e2e-edge-std", "e2e-edge-std-net", armor.Ptr(standard))
	s.create(t, stdPolicy, stdService)
	s.waitReady(t, stdPolicy)
	s.waitCondition(t, stdService, "to show GCP's refusal on Cloud Armor Standard", func(c map[string]condition) error {
		if c["Synced"].Status != "False" || !strings.Contains(c["Synced"].Message, "Network edge security policies need Cloud Armor Enterprise; project '"+standard+"' is on CA_STANDARD") {
			return fmt.Errorf("Synced=%s", c["Synced"])
		}
		return nil
	})
	const quiet = 20 * time.Second
	inserts := func() int64 { return s.emu.Stats().Methods["networkEdgeSecurityServices.insert"] }
	n := inserts()
	time.Sleep(quiet)
	// The error backoff doubles from 100 ms: about five tries in twenty
	// seconds, also in the full suite, where the provider's global rate
	// limiter puts reconciles off: its put-offs keep the object's failures
	// (the kinds' rate-limit gate in package setup; before, each put-off restarted the backoff and
	// twelve tries were seen). A hot loop would be hundreds.
	got := inserts() - n
	t.Logf("refused on Cloud Armor Standard: %d inserts in %s", got, quiet)
	if got > 8 {
		t.Errorf("a refused service: %d inserts in %s, want at most 8 (backoff, no hot loop)", got, quiet)
	}
	if _, err := gcpService(standard, "e2e-edge-std"); err == nil {
		t.Errorf("GCP holds a service it refused")
	}
	// Enrolled, the next try creates it.
	if err := s.emu.SetTier(standard, emulator.TierEnterprisePaygo); err != nil {
		t.Fatal(err)
	}
	s.waitReadyWithin(t, 2*time.Minute, stdService)

	// A service made elsewhere carries no label to say whose it is: an
	// object that may create refuses it and leaves it in place; one whose
	// managementPolicies leave out Create takes it over.
	const foreign = "e2e-edge-foreign"
	s.gcpDo(t, s.project, region, func() (*compute.Operation, error) {
		return s.gcp.NetworkEdgeSecurityServices.Insert(s.project, region, &compute.NetworkEdgeSecurityService{Name: foreign, Description: "made elsewhere"}).Do()
	})
	refused := service(foreign, "e2e-edge-net", nil)
	s.create(t, refused)
	s.waitCondition(t, refused, "to refuse a service it did not create", func(c map[string]condition) error {
		if c["Synced"].Status != "False" || !strings.Contains(c["Synced"].Message, "this object did not create it") {
			return fmt.Errorf("Synced=%s", c["Synced"])
		}
		return nil
	})
	s.delete(t, refused)
	s.waitGone(t, refused)
	if es, err := gcpService(s.project, foreign); err != nil || es.Description != "made elsewhere" || es.SecurityPolicy != "" {
		t.Errorf("GCP service %s after the refused object was deleted: want it untouched, got %+v, %v", foreign, es, err)
	}
	adopter := service(foreign, "e2e-edge-net", nil)
	adopter.SetManagementPolicies(xpv2.ManagementPolicies{xpv2.ManagementActionObserve, xpv2.ManagementActionUpdate})
	s.create(t, adopter)
	s.waitReady(t, adopter)
	holdsSpec := func(description string) func() error {
		return func() error {
			es, err := gcpService(s.project, foreign)
			if err != nil {
				return err
			}
			if es.Description != description || es.SecurityPolicy != wantPolicy {
				return fmt.Errorf("description %q, securityPolicy %q", es.Description, es.SecurityPolicy)
			}
			return nil
		}
	}
	s.eventually(t, waitFor, "the adopted service to hold the spec", holdsSpec("first"))
	s.delete(t, adopter)
	s.waitGone(t, adopter)
	if _, err := gcpService(s.project, foreign); err != nil {
		t.Errorf("GCP service %s after its [Observe, Update] adopter was deleted: want it left in place, got %v", foreign, err)
	}
	// Handed over by the annotation, an object owns it outright.
	owner := service(foreign, "e2e-edge-net", nil)
	owner.Spec.ForProvider.Description = armor.Ptr("handed over")
	meta.SetExternalCreateSucceeded(owner, time.Now())
	s.create(t, owner)
	s.waitReady(t, owner)
	s.eventually(t, waitFor, "the handed-over service to hold the spec", holdsSpec("handed over"))
	s.delete(t, owner)
	s.waitGone(t, owner)
	if _, err := gcpService(s.project, foreign); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("GCP service %s after its owner was deleted: want 404, got %v", foreign, err)
	}

	// Deleting the services deletes them in GCP; then their policies can go.
	s.delete(t, cr, stdService)
	s.waitGone(t, cr)
	s.waitGone(t, stdService)
	for _, k := range [][2]string{{s.project, "e2e-edge"}, {standard, "e2e-edge-std"}} {
		if _, err := gcpService(k[0], k[1]); err == nil || !strings.Contains(err.Error(), "404") {
			t.Errorf("GCP service %s/%s after its object was deleted: want 404, got %v", k[0], k[1], err)
		}
	}
	s.delete(t, sp, stdPolicy)
	s.waitGone(t, sp)
	s.waitGone(t, stdPolicy)
}
