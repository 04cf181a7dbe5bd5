// Package kube holds what the suites need to talk to the API server about
// this provider's kinds.
package kube

import (
	"testing"

	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/armorplane/provider-cloudarmor/apis"
)

// Scheme knows the built-in kinds and this provider's.
func Scheme() (*k8sruntime.Scheme, error) {
	s := k8sruntime.NewScheme()
	for _, add := range []func(*k8sruntime.Scheme) error{clientgoscheme.AddToScheme, apis.AddToScheme} {
		if err := add(s); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// SchemeT is Scheme, failing the test on error.
func SchemeT(tb testing.TB) *k8sruntime.Scheme {
	tb.Helper()
	s, err := Scheme()
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
