// Package v1alpha1 contains AddressSet: the addresses of the Kubernetes Nodes a
// selector matches, kept current by the provider, so that a composition reads
// a few kilobytes of addresses instead of every Node in full.
// +kubebuilder:object:generate=true
// +groupName=cloudarmor.armorplane.io
// +versionName=v1alpha1
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

// Package type metadata.
const (
	Group   = "cloudarmor.armorplane.io"
	Version = "v1alpha1"
)

var (
	// SchemeGroupVersion is the group version used to register these objects.
	SchemeGroupVersion = schema.GroupVersion{Group: Group, Version: Version}

	// SchemeBuilder is used to add go types to the GroupVersionKind scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: SchemeGroupVersion}
)
