package tenancy

import (
	"context"
	"fmt"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

const (
	// instancesZone is where the tests' instances live.
	instancesZone = "us-central1-a"
	// instancesPoll is an instance source's default pollSeconds.
	instancesPoll = 30 * time.Second
)

// instanceSet creates an AddressSet of ns listing project's instances of
// pool tenancy with the config pc.
func (s *suite) instanceSet(t *testing.T, ns, name, project string, pc *xpv2.ProviderConfigReference) *v1alpha1.AddressSet {
	t.Helper()
	as := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.AddressSetSpec{ProviderConfigRef: pc, Instances: &v1alpha1.InstanceSelector{
			Project: project, MatchLabels: map[string]string{"pool": "tenancy"}}}}
	if err := s.Admin.Create(context.Background(), as); err != nil {
		t.Fatal(err)
	}
	return as
}

// setCounts is a condition: the AddressSet is Ready and holds n addresses.
func (s *suite) setCounts(as *v1alpha1.AddressSet, n int) func() error {
	return func() error {
		got := &v1alpha1.AddressSet{}
		if err := s.Admin.Get(context.Background(), client.ObjectKeyFromObject(as), got); err != nil {
			return err
		}
		if c := got.Status.GetCondition(xpv2.TypeReady); c.Status != "True" || got.Status.AddressCount != n {
			return fmt.Errorf("AddressSet %s: Ready=%s %q with %d addresses, want True with %d", client.ObjectKeyFromObject(as), c.Status, c.Message, got.Status.AddressCount, n)
		}
		return nil
	}
}

// testInstancesStayInNamespace: an instance source lists instances only as
// its namespace may. Tenant-a's own ProviderConfig may not read proj-b: GCP's
// 403, and none of proj-b's addresses. A ClusterProviderConfig that does not
// admit tenant-b makes no call for it. Tenant-a, admitted, is the positive
// control: the same config lists through the counting proxy.
func (s *suite) testInstancesStayInNamespace(t *testing.T) {
	ctx := context.Background()
	op, err := s.gcp.Instances.Insert(projB, instancesZone, &compute.Instance{Name: "tenancy-b-1",
		MachineType: "zones/" + instancesZone + "/machineTypes/e2-medium", Labels: map[string]string{"pool": "tenancy"},
		NetworkInterfaces: []*compute.NetworkInterface{{AccessConfigs: []*compute.AccessConfig{{Type: "ONE_TO_ONE_NAT", NatIP: "34.99.0.1"}}}},
	}).Context(ctx).Do()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.gcp.ZoneOperations.Wait(projB, instancesZone, op.Name).Context(ctx).Do(); err != nil {
		t.Fatal(err)
	}

	otherProject := s.instanceSet(t, "tenant-a", "reads-proj-b", projB, &xpv2.ProviderConfigReference{Kind: "ProviderConfig", Name: "default"})
	notAdmitted := s.instanceSet(t, "tenant-b", "through-tenant-a-only", projA, &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: cpcTenantAOnly})
	admitted := s.instanceSet(t, "tenant-a", "through-tenant-a-only", projA, &xpv2.ProviderConfigReference{Kind: "ClusterProviderConfig", Name: cpcTenantAOnly})

	refused := all(
		s.setSays(otherProject, "cannot read the instances of project proj-b", "403"),
		s.setSays(notAdmitted, `ClusterProviderConfig "tenant-a-only" does not admit namespace "tenant-b"`),
	)
	s.Eventually(t, settle, "tenant-a's read of proj-b denied by GCP, tenant-b refused the config that does not admit it", refused)
	s.Eventually(t, settle, "tenant-a's admitted instance source Ready, with proj-a's instances (none)", s.setCounts(admitted, 0))
	noLeak := func() error {
		got := &v1alpha1.AddressSet{}
		if err := s.Admin.Get(ctx, client.ObjectKeyFromObject(otherProject), got); err != nil {
			return err
		}
		if len(got.Status.Addresses) > 0 {
			return fmt.Errorf("tenant-a's AddressSet holds proj-b's addresses %v", got.Status.Addresses)
		}
		return nil
	}
	listed := len(s.proxy.CallsTo("/projects/" + projA + "/aggregated/instances"))
	if listed == 0 {
		t.Fatal("the counting proxy saw no instance list from the admitted source: the no-call assertion below proves nothing")
	}
	s.holds(t, window, "no proj-b address in tenant-a, and only tenant-a's source lists through tenant-a-only", all(refused, noLeak, func() error {
		// One list per poll for the admitted source alone; tenant-b's would
		// add as many.
		if n := len(s.proxy.CallsTo("/projects/" + projA + "/aggregated/instances")); n > listed+int(window/instancesPoll)+1 {
			return fmt.Errorf("%d instance lists of proj-a through tenant-a-only, more than the admitted source's polls", n)
		}
		return nil
	}))
}
