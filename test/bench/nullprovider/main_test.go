//go:build bench

package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/armorplane/provider-cloudarmor/cmd/provider/app"
)

// The benchmark divides the provider's figures by the null provider's, so
// the null provider must be the provider with only its external system
// different. Both run app.Main; their options may differ in External only.
// What External changes is guarded further down:
// TestOptionsChangeOnlyTheExternalSystem (cmd/provider/app) and
// TestExternalChangesOnlyTheConnector (inmemory).
func TestOnlyTheExternalSystemDiffers(t *testing.T) {
	null := options()
	if null.External == nil {
		t.Error("the null provider connects to GCP: options().External is nil")
	}
	if diff := cmp.Diff(app.Provider(), null, cmpopts.IgnoreFields(app.Options{}, "External")); diff != "" {
		t.Errorf("options(): -provider, +null provider:\n%s", diff)
	}
}
