package tenancy

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// testEdgeServiceStaysInItsNamespace: a tenant cannot point a
// NetworkEdgeSecurityService at another namespace's SecurityPolicy. A
// reference naming the other namespace is refused at admission; one without
// a namespace resolves in the tenant's own namespace only, so it never
// reaches the other tenant's policy and the provider makes no GCP call for
// it; and naming the other project's policy by URL through the tenant's
// own ProviderConfig is refused by GCP (a service takes only its own
// project's policy), its message in Synced. Nothing reaches GCP.
func (s *suite) testEdgeServiceStaysInItsNamespace(t *testing.T) {
	const region = "us-west1"
	policy := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: edge-net-a, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider:
    region: `+region+`
    type: CLOUD_ARMOR_NETWORK
    description: tenant-a's network policy
    defaultRule: {action: "deny(403)", networkMatch: {srcIpRanges: ["*"]}}`)
	s.Eventually(t, settle, "tenant-a/edge-net-a Ready", s.ready(policy))

	crossRef := decode(t, `apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: NetworkEdgeSecurityService
metadata: {name: edge-cross-ref, namespace: tenant-b}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider:
    region: `+region+`
    securityPolicyRef: {name: edge-net-a, namespace: tenant-a}`)
	err := s.Admin.Create(context.Background(), crossRef)
	if err == nil || !strings.Contains(err.Error(), "securityPolicyRef must name a SecurityPolicy in this object's namespace") {
		t.Errorf("a service referencing another namespace's policy: want admission to refuse it, got %v", err)
	}

	// Calls about a service. tenant-a's CLOUD_ARMOR_NETWORK policy lists
	// its project's services once per poll (networkEdgeSecurityServices
	// .aggregatedList, for its Attached condition): a project-wide read of
	// tenant-a's, not a call for tenant-b's service.
	edges := func() int64 {
		var n int64
		for m, c := range s.Emu.Stats().Methods {
			if strings.HasPrefix(m, "networkEdgeSecurityServices.") && m != "networkEdgeSecurityServices.aggregatedList" {
				n += c
			}
		}
		return n
	}
	base := edges()
	sameName := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: NetworkEdgeSecurityService
metadata: {name: edge-same-name, namespace: tenant-b}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider:
    region: `+region+`
    securityPolicyRef: {name: edge-net-a}`)
	unresolved := s.syncedFalse(sameName, "cannot resolve references", `"edge-net-a" not found`)
	s.Eventually(t, settle, "tenant-b's reference left unresolved in its own namespace", unresolved)
	s.holds(t, window, "no GCP call for the unresolved service", all(unresolved, func() error {
		if n := edges() - base; n != 0 {
			return fmt.Errorf("%d calls to networkEdgeSecurityServices", n)
		}
		return nil
	}))
	var svc v1alpha1.NetworkEdgeSecurityService
	if err := s.Admin.Get(context.Background(), client.ObjectKeyFromObject(sameName), &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ForProvider.SecurityPolicy != nil {
		t.Errorf("tenant-b's reference resolved to %q", *svc.Spec.ForProvider.SecurityPolicy)
	}

	byURL := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: NetworkEdgeSecurityService
metadata: {name: edge-by-url, namespace: tenant-b}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider:
    region: `+region+`
    securityPolicy: projects/`+projA+`/regions/`+region+`/securityPolicies/edge-net-a`)
	s.Eventually(t, settle, "GCP to refuse tenant-b's service naming proj-a's policy", s.syncedFalse(byURL,
		"must be a regional security policy of project '"+projB+"' in region '"+region+"', like the network edge security service"))
	if _, err := s.gcp.NetworkEdgeSecurityServices.Get(projB, region, "edge-by-url").Do(); err == nil {
		t.Errorf("GCP holds tenant-b's refused service")
	}

	for _, o := range []*unstructured.Unstructured{sameName, byURL, policy} {
		s.delete(t, o)
	}
	for _, o := range []*unstructured.Unstructured{sameName, byURL, policy} {
		s.Eventually(t, settle, "deleted", s.gone(o))
	}
}
