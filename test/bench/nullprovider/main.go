//go:build bench

// Command nullprovider is the benchmark's floor: the provider itself, built
// by the same app.Main from the same flags, scheme, cache, client, manager,
// CRD gate and controllers (AddressSet, allowlist and ProviderConfig ones
// included), with one difference: every managed resource kind connects to
// an external system that answers from memory (package inmemory) instead of
// GCP. It makes no GCP writes, so the rules' write-backlog gate, which only
// those writes fill, never closes. What it costs the API server and the
// clock to converge a workload is what the provider's machinery costs on its
// own; the benchmark runs it before the real provider and reports ours ÷
// floor.
//
// It is behind the bench build tag and is not shipped.
package main

import (
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/cmd/provider/app"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
	"github.com/armorplane/provider-cloudarmor/test/bench/nullprovider/inmemory"
)

func main() {
	app.Main(options())
}

// options are the provider's, with the in-memory external system in place
// of GCP (TestOnlyTheExternalSystemDiffers).
func options() app.Options {
	o := app.Provider()
	o.External = func(usage resource.ModernTracker) setup.External {
		return inmemory.External(inmemory.NewStore(), usage)
	}
	return o
}
