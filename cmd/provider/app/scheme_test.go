package app

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

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

// The scheme used to hold all of client-go's kinds, about 60 API groups the
// provider never uses, at a cost in memory for every process. It holds this
// provider's groups, CRDs and only the built-in kinds it reads or writes.
func TestSchemeHoldsOnlyWhatTheProviderUses(t *testing.T) {
	s, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	builtin := map[string]bool{}
	for gvk := range s.AllKnownTypes() {
		switch gvk.Group {
		case v1beta1.Group, pcv1beta1.Group:
			continue
		}
		if isMetaKind(gvk.Kind) {
			continue
		}
		builtin[gvk.GroupVersion().String()+"/"+gvk.Kind] = true
	}
	want := []string{
		"v1/Secret", "v1/SecretList", "v1/Event", "v1/EventList", "v1/Namespace", "v1/NamespaceList", "v1/Node", "v1/NodeList",
		"coordination.k8s.io/v1/Lease", "coordination.k8s.io/v1/LeaseList",
		"apiextensions.k8s.io/v1/CustomResourceDefinition", "apiextensions.k8s.io/v1/CustomResourceDefinitionList",
	}
	for _, k := range want {
		if !builtin[k] {
			t.Errorf("scheme lacks %s", k)
		}
		delete(builtin, k)
	}
	for k := range builtin {
		t.Errorf("scheme holds %s, which the provider does not use", k)
	}
	for _, o := range []client.Object{&corev1.ConfigMap{}, &corev1.Pod{}, &appsv1.Deployment{}} {
		if _, err := apiutil.GVKForObject(o, s); err == nil {
			t.Errorf("scheme knows %T", o)
		}
	}
}

// isMetaKind reports whether kind is one that registering a group-version
// brings along: metav1.AddToGroupVersion's options, Status, WatchEvent and
// discovery kinds, and apiextensions' ConversionReview.
func isMetaKind(kind string) bool {
	switch kind {
	case "WatchEvent", "Status", "ListOptions", "GetOptions", "DeleteOptions", "CreateOptions",
		"UpdateOptions", "PatchOptions", "ApplyOptions",
		"APIVersions", "APIGroupList", "APIGroup", "APIResourceList", "ConversionReview":
		return true
	}
	return false
}
