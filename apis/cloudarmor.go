// Package apis contains the Kubernetes API types of provider-cloudarmor.
package apis

import (
	"k8s.io/apimachinery/pkg/runtime"

	cloudarmorv1alpha1 "github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	cloudarmorv1beta1 "github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

// AddToSchemes lists the SchemeBuilder.AddToScheme functions of every API group.
var AddToSchemes = runtime.SchemeBuilder{
	v1beta1.SchemeBuilder.AddToScheme,
	cloudarmorv1beta1.SchemeBuilder.AddToScheme,
	cloudarmorv1alpha1.SchemeBuilder.AddToScheme,
}

// AddToScheme adds all of the provider's types to a scheme.
func AddToScheme(s *runtime.Scheme) error {
	return AddToSchemes.AddToScheme(s)
}
