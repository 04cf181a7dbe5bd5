package tenancy

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/api/compute/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

const (
	// natRegion and natRouter are the Cloud Router the tests' NAT sources read.
	natRegion = "us-central1"
	natRouter = "tenancy-egress"
)

// natSet creates an AddressSet of ns reading the Cloud NAT of project's
// router natRouter with the config pc.
func (s *suite) natSet(t *testing.T, ns, name, project string, pc *xpv2.ProviderConfigReference) *v1alpha1.AddressSet {
	t.Helper()
	as := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AddressSetSpec{ProviderConfigRef: pc, NAT: &v1alpha1.NATSelector{
			Project: project, Region: natRegion, Router: natRouter}}}
	if err := s.Admin.Create(context.Background(), as); err != nil {
		t.Fatal(err)
	}
	return as
}

// insertRouter creates natRouter, with one NAT, in project.
func (s *suite) insertRouter(t *testing.T, project string) {
	t.Helper()
	ctx := context.Background()
	op, err := s.gcp.Routers.Insert(project, natRegion, &compute.Router{Name: natRouter, Network: "global/networks/default",
		Nats: []*compute.RouterNat{{Name: "egress-nat", NatIpAllocateOption: "AUTO_ONLY", SourceSubnetworkIpRangesToNat: "ALL_SUBNETWORKS_ALL_IP_RANGES"}},
	}).Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.gcp.RegionOperations.Wait(project, natRegion, op.Name).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}
}

// testNATStaysInNamespace: a Cloud NAT source reads routers only as its
// namespace may, exactly as an instance source lists instances. Tenant-a
// naming proj-b through a ClusterProviderConfig whose allowedProjects do not
// list it is refused before any GCP call, and holds none of proj-b's
// addresses; the same source naming proj-a reads through the counting proxy
// (the positive control).
func (s *suite) testNATStaysInNamespace(t *testing.T) {
	s.insertRouter(t, projA)
	s.insertRouter(t, projB)
	watched := &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: cpcWatched}
	foreign := s.natSet(t, "tenant-a", "nat-of-proj-b", projB, watched)
	own := s.natSet(t, "tenant-a", "nat-of-proj-a", projA, watched)

	refused := s.setSays(foreign, `ClusterProviderConfig "`+cpcWatched+`" may not name project "`+projB+`"`, "spec.allowedProjects")
	s.Eventually(t, settle, "tenant-a's nat source of proj-b refused", refused)
	// The NAT holds one address when its router is inserted.
	s.Eventually(t, settle, "tenant-a's nat source of proj-a Ready with the NAT's address", s.setCounts(own, 1))
	routerPath := func(project string) string {
		return "/projects/" + project + "/regions/" + natRegion + "/routers/" + natRouter
	}
	if len(s.proxy.CallsTo(routerPath(projA))) == 0 {
		t.Fatal("the counting proxy saw no router read from the admitted source: the no-call assertion below proves nothing")
	}
	noLeak := func() error {
		got := &v1alpha1.AddressSet{}
		if err := s.Admin.Get(context.Background(), client.ObjectKeyFromObject(foreign), got); err != nil {
			return err
		}
		if len(got.Status.Addresses) > 0 {
			return fmt.Errorf("tenant-a's refused nat source holds proj-b's addresses %v", got.Status.Addresses)
		}
		if c := s.proxy.CallsTo(routerPath(projB)); len(c) > 0 {
			return fmt.Errorf("%d calls for proj-b's router through the refused source's config: %v", len(c), c)
		}
		return nil
	}
	s.holds(t, window, "tenant-a's nat source of proj-b refused, making no GCP call", all(refused, noLeak))
}
