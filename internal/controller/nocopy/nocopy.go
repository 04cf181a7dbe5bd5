// Package nocopy reads the informer cache without copying what it reads.
package nocopy

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Lister lists from the informer cache without deep-copying what it lists,
// for readers that only look. The state metrics recorder lists every managed
// resource of its kind every few seconds (--poll-state-metric, 5 s) to count
// Ready and Synced conditions: with a copy each time, a thousand rules made
// megabytes of garbage every 5 s, which set the heap's peak and a good part
// of the provider's steady-state CPU. What it lists must not be modified: it
// is the cache's own objects.
type Lister struct{ client.Client }

// List lists with client.UnsafeDisableDeepCopy.
func (c Lister) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Client.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...)
}
