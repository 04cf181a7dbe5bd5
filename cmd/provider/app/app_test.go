package app

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/logging"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// The benchmark's null provider is Main with Options.External set: setting
// it must change the controllers' external system and nothing else, or the
// floor is not the provider's machinery.
func TestOptionsChangeOnlyTheExternalSystem(t *testing.T) {
	app, f, _, _ := newApp("provider")
	if _, err := app.Parse(nil); err != nil {
		t.Fatal(err)
	}
	co := controller.Options{Logger: logging.NewNopLogger(), MaxConcurrentReconciles: f.maxConcurrent, PollInterval: f.poll}
	var usage resource.ModernTrackerFn = func(context.Context, resource.ModernManaged) error { return nil }
	w := wiring{writes: gcp.NewWriteQueue(), usage: usage, cluster: "uid", nodes: true}

	var trackedWith resource.ModernTracker
	external := func(u resource.ModernTracker) setup.External {
		trackedWith = u
		return func(schema.GroupVersionKind) managed.ExternalConnector { return nil }
	}
	provider := controllers(f, Provider(), co, w)
	null := controllers(f, Options{External: external}, co, w)

	if provider.External != nil {
		t.Errorf("the provider's controllers have an external system in place of GCP")
	}
	if null.External == nil {
		t.Errorf("the null provider's controllers have no external system in place of GCP")
	}
	if reflect.ValueOf(trackedWith).Pointer() != reflect.ValueOf(usage).Pointer() {
		t.Errorf("the external system does not track ProviderConfig usage with the provider's tracker")
	}
	sameFunc := cmp.FilterValues(func(x, y any) bool {
		return reflect.ValueOf(x).Kind() == reflect.Func && reflect.ValueOf(y).Kind() == reflect.Func
	}, cmp.Comparer(func(x, y any) bool {
		return reflect.ValueOf(x).Pointer() == reflect.ValueOf(y).Pointer()
	}))
	// Each call makes its own wake; what matters is that both have one.
	bothWake := cmp.Comparer(func(x, y *setup.Wake) bool { return (x == nil) == (y == nil) })
	if diff := cmp.Diff(provider, null, sameFunc, bothWake, cmp.Exporter(func(reflect.Type) bool { return true }),
		cmpopts.IgnoreFields(setup.Options{}, "External")); diff != "" {
		t.Errorf("controllers(...): -provider, +null provider:\n%s", diff)
	}
}

func TestCheckOwnerIdentity(t *testing.T) {
	cases := map[string]struct {
		reason string
		id     string
		err    bool
	}{
		"UID":      {reason: "an old cluster's kube-system UID is the identity a move keeps", id: "5f0c3b7e-2a51-4c8e-9a3b-1d2e3f4a5b6c"},
		"Name":     {reason: "a name the platform team chose", id: "prod/eu:mgmt_1.a"},
		"Space":    {reason: "a space is a paste gone wrong", id: "prod cluster", err: true},
		"Newline":  {reason: "so is a line break", id: "prod\n", err: true},
		"TooLong":  {reason: "a label value is hashed from it, but nobody means 254 characters", id: string(make([]byte, 254)), err: true},
		"Longest":  {reason: "253 characters are allowed", id: strings.Repeat("a", 253)},
		"NonASCII": {reason: "only ASCII letters", id: "prüd", err: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := checkOwnerIdentity(tc.id)
			if (err != nil) != tc.err {
				t.Errorf("\n%s\ncheckOwnerIdentity(%q): %v, want error %t", tc.reason, tc.id, err, tc.err)
			}
		})
	}
}
