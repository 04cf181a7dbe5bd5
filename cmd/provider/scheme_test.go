package main

import (
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

// The provider used to register the CRD kind only after NewManager, whose
// cache resolves its ByObject kinds at once: the binary exited at start with
// "no kind is registered for the type v1.CustomResourceDefinition".
func TestSchemeKnowsEveryKindBeforeTheManagerIsBuilt(t *testing.T) {
	s, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	var objs []client.Object
	for o := range cacheOptions(nil).ByObject {
		objs = append(objs, o)
	}
	objs = append(objs, &v1beta1.SecurityPolicy{}, &v1beta1.SecurityPolicyRule{},
		&pcv1beta1.ProviderConfig{}, &pcv1beta1.ClusterProviderConfig{}, &pcv1beta1.ProviderConfigUsage{})
	for _, o := range objs {
		if _, err := apiutil.GVKForObject(o, s); err != nil {
			t.Errorf("%T: %v", o, err)
		}
	}
}
