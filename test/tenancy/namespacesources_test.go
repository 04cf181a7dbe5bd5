package tenancy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// setIs is a condition: the AddressSet's Ready is status, its message holds
// every one of msgs, and it holds exactly addresses.
func (s *suite) setIs(as *v1alpha1.AddressSet, status corev1.ConditionStatus, addresses []string, msgs ...string) func() error {
	return func() error {
		got := &v1alpha1.AddressSet{}
		if err := s.Admin.Get(context.Background(), client.ObjectKeyFromObject(as), got); err != nil {
			return err
		}
		c := got.Status.GetCondition(xpv2.TypeReady)
		if c.Status != status {
			return fmt.Errorf("AddressSet %s: Ready=%s %s %q, want %s", client.ObjectKeyFromObject(as), c.Status, c.Reason, c.Message, status)
		}
		for _, m := range msgs {
			if !strings.Contains(c.Message, m) {
				return fmt.Errorf("AddressSet %s: Ready message %q does not contain %q", client.ObjectKeyFromObject(as), c.Message, m)
			}
		}
		if !slices.Equal(got.Status.Addresses, addresses) && !(len(got.Status.Addresses) == 0 && len(addresses) == 0) {
			return fmt.Errorf("AddressSet %s holds %v, want %v", client.ObjectKeyFromObject(as), got.Status.Addresses, addresses)
		}
		return nil
	}
}

// testNamespaceSourcesStayInNamespace: the objects an AddressSet's services,
// object and configMap sources read are read in its own namespace only, and
// only as far as the platform granted the provider. tenant-b keeps a
// ConfigMap of the name tenant-a's set asks for, and a LoadBalancer Service
// with the labels tenant-a's set selects: tenant-a's sets hold nothing of
// tenant-b's, and read tenant-a's own ConfigMap once it exists. The node
// grants the provider ConfigMaps (Crossplane's RBAC manager) and Services
// (examples/allowlist/rbac.yaml) but not PersistentVolumeClaims: a set
// reading those reads nothing, saying forbidden. A Secret cannot be named.
func (s *suite) testNamespaceSourcesStayInNamespace(t *testing.T) {
	ctx := context.Background()
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-b", Name: "egress"}, Data: map[string]string{"cidrs": "192.0.2.0/24"}}
	if err := s.Admin.Create(ctx, theirs); err != nil {
		t.Fatal(err)
	}
	s.loadBalancer(t, "tenant-b", "egress-gateway", "34.120.9.9")
	list := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "partner-egress"},
		Spec: v1alpha1.AddressSetSpec{ConfigMap: &v1alpha1.ConfigMapKeySelector{Name: "egress", Key: "cidrs"}}}
	gateway := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "gateway"},
		Spec: v1alpha1.AddressSetSpec{Services: &v1alpha1.ServiceSelector{MatchLabels: map[string]string{"app": "egress-gateway"}}}}
	claims := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "claims"},
		Spec: v1alpha1.AddressSetSpec{Object: &v1alpha1.ObjectSelector{APIVersion: "v1", Kind: "PersistentVolumeClaim",
			MatchLabels: map[string]string{"app": "egress"}, FieldPath: "metadata.annotations.egress"}}}
	for _, as := range []*v1alpha1.AddressSet{list, gateway, claims} {
		if err := s.Admin.Create(ctx, as); err != nil {
			t.Fatal(err)
		}
	}
	s.Eventually(t, settle, "tenant-a's ConfigMap set to find no ConfigMap of its own",
		s.setIs(list, corev1.ConditionFalse, nil, "ConfigMap tenant-a/egress", "not found"))
	s.Eventually(t, settle, "tenant-a's service set to read its namespace's Services", s.setIs(gateway, corev1.ConditionTrue, nil))
	s.holds(t, 3*time.Second, "tenant-a's sets holding nothing of tenant-b's", all(
		s.setIs(list, corev1.ConditionFalse, nil, "not found"), s.setIs(gateway, corev1.ConditionTrue, nil)))

	mine := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "egress"}, Data: map[string]string{"cidrs": "198.51.100.0/28"}}
	if err := s.Admin.Create(ctx, mine); err != nil {
		t.Fatal(err)
	}
	s.Eventually(t, settle, "tenant-a's set to read its own ConfigMap", s.setIs(list, corev1.ConditionTrue, []string{"198.51.100.0/28"}))
	s.loadBalancer(t, "tenant-a", "egress-gateway", "34.120.0.10")
	s.Eventually(t, settle, "tenant-a's set to read its own Service", s.setIs(gateway, corev1.ConditionTrue, []string{"34.120.0.10/32"}))

	s.Eventually(t, settle, "the set of a kind not granted to say the provider may not list it", s.setIs(claims, corev1.ConditionFalse, nil, "forbidden"))

	secret := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "secret"},
		Spec: v1alpha1.AddressSetSpec{Object: &v1alpha1.ObjectSelector{APIVersion: "v1", Kind: "Secret", ObjectName: "creds", FieldPath: "data.token"}}}
	err := s.Admin.Create(ctx, secret)
	if err == nil || !strings.Contains(err.Error(), "an object source cannot read Secrets") {
		t.Errorf("an AddressSet reading a Secret: want refused at admission, got %v", err)
	}
}

// loadBalancer creates a Service of type LoadBalancer labelled
// app=egress-gateway whose load balancer reports ip, as a cloud's service
// controller would.
func (s *suite) loadBalancer(t *testing.T, namespace, name, ip string) {
	t.Helper()
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name, Labels: map[string]string{"app": "egress-gateway"}},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Selector: map[string]string{"app": "egress-gateway"},
			Ports: []corev1.ServicePort{{Name: "https", Port: 443, Protocol: corev1.ProtocolTCP}}},
	}
	if err := s.Admin.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: ip}}
	if err := s.Admin.Status().Update(ctx, svc); err != nil {
		t.Fatal(err)
	}
}
