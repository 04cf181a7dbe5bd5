// Package setup wires every managed resource controller of this provider the
// same way: a kind is a Kind value, and Add performs the steps whose order
// matters (indexes, read-your-writes, options, reconciler, gates, watches)
// in one place (kind). The other files hold one concern each: options (the managed
// reconciler's options), gates (reconciles put off before they run), watches
// (what else enqueues an object), poll (when an object is observed) and
// status (what the reconciler's own writes must keep).
package setup

import (
	"context"
	"time"

	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/controller"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/feature"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/netguard"
)

// creationGracePeriod is how long after a successful create an observation
// that the external resource does not exist is not trusted. GCP is
// read-after-write consistent, so none.
const creationGracePeriod = time.Duration(0)

// Per-object requeue backoff: crossplane-runtime's controllers start at 1 s.
// Every create ends with a rate-limited requeue to observe the result, and a
// rule applied together with its policy fails a few times until the policy
// exists, so a 1 s base doubled into several seconds between a rule's
// creation in GCP and its Ready condition. The global rate limiter still
// bounds the total, and errors still back off to maxRequeueDelay.
const (
	baseRequeueDelay = 100 * time.Millisecond
	maxRequeueDelay  = 60 * time.Second
)

// newControllerRateLimiter returns the per-object requeue rate limiter.
func newControllerRateLimiter() workqueue.TypedRateLimiter[reconcile.Request] {
	return workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](baseRequeueDelay, maxRequeueDelay)
}

// Options configure the managed resource controllers.
type Options struct {
	controller.Options

	// Connector resolves ProviderConfigs into GCP clients.
	Connector *connector.Connector

	// External, when set, is every kind's external system in place of GCP
	// (see WithExternal): the null provider's. Nil is each kind's own
	// Connector.
	External External

	// PollJitter is the width of the window in which the objects reading
	// one GCP policy are polled (see pollHook), and the ± jitter of the
	// polls of objects whose policy is not known yet.
	PollJitter time.Duration

	// Timeout bounds each reconcile's calls to GCP, operation waits included.
	Timeout time.Duration

	// Indexes are the ownership indexes the kinds that compete for a GCP
	// object read; whichever starts first registers them.
	Indexes *ownership.Indexes

	// Labeler names the owner of each GCP policy in its labels.
	Labeler ownership.Labeler

	// Writes is the provider's queue of GCP writes; controllers whose
	// objects write one policy each put their reconciles off while its
	// queue is full (see Backlog). Nil turns that off.
	Writes WriteQueue[gcp.PolicyKey]

	// Dial is where the provider may connect on a tenant's behalf: every
	// connection to an address a tenant names (a remote cluster's API
	// server, a namespaced endpoint) dials through it. Nil refuses what
	// netguard refuses by default and allows nothing more.
	Dial *netguard.Policy

	// PolicyWake has SecurityPolicies reconciled at once when an
	// attachment changed what uses them. Nil turns that off: they see it
	// at their next poll.
	PolicyWake *Wake
}

// sharedReconcilerOptions returns the managed.NewReconciler options every kind
// uses, recording events with rec.
// group names the GCP policy an object of the kind observes: the objects of
// one policy are polled together, so they share one snapshot of it.
func (o Options) sharedReconcilerOptions(name string, rec event.Recorder, group PollGroupFn) []managed.ReconcilerOption {
	opts := []managed.ReconcilerOption{
		managed.WithLogger(o.Logger.WithValues("controller", name)),
		managed.WithRecorder(rec),
		managed.WithPollInterval(o.PollInterval),
		managed.WithMinPollInterval(time.Second),
		// Names are chosen by users (policy) or derived from the spec
		// (rule), so a lost external-create-pending annotation must not wedge
		// an object: creating again is safe.
		managed.WithDeterministicExternalName(true),
		// Create returns only once GCP's operation is DONE, and GCP reads
		// are consistent with it, so "not found" right after a create is
		// the truth (a rule removed by someone else, or an object deleted
		// at once), not lag. crossplane-runtime's default 30 s grace period
		// for eventually consistent APIs made such objects wait until 30 s
		// after their create: deletes hung and removed rules came back late.
		managed.WithCreationGracePeriod(creationGracePeriod),
		managed.WithPollIntervalHook(pollHook(group, o.PollJitter, o.PollJitter)),
	}
	if o.Timeout > 0 {
		opts = append(opts, managed.WithTimeout(o.Timeout))
	}
	if o.Features != nil && o.Features.Enabled(feature.EnableBetaManagementPolicies) {
		opts = append(opts, managed.WithManagementPolicies())
	}
	if o.MetricOptions != nil && o.MetricOptions.MRMetrics != nil {
		opts = append(opts, managed.WithMetricRecorder(o.MetricOptions.MRMetrics))
	}
	// Change logs (--enable-changelogs): the reconciler sends one entry per
	// create, update and delete it asks of GCP, failed ones included, with
	// the object as it was observed just before (status.atProvider is what
	// GCP held, spec.forProvider what was asked for). Off, crossplane-runtime
	// logs nothing and costs nothing.
	if o.Features != nil && o.Features.Enabled(feature.EnableAlphaChangeLogs) && o.ChangeLogOptions != nil && o.ChangeLogOptions.ChangeLogger != nil {
		opts = append(opts, managed.WithChangeLogger(o.ChangeLogOptions.ChangeLogger))
	}
	return opts
}

// eventCorrelatorCacheSize is how many distinct events (by object, reason and
// message) the event recorder remembers to count repeats and filter spam.
// client-go's 4,096 per cache was a tenth of the provider's live heap
// (docs/performance.md); with fewer, an object's repeated event after 256
// others' becomes a new Event instead of a count on the old one.
const eventCorrelatorCacheSize = 256

// NewEventBroadcaster returns the event broadcaster for the manager
// (ctrl.Options.EventBroadcaster), with eventCorrelatorCacheSize. The
// manager does not stop a broadcaster it was given; the provider's lives as
// long as its process.
func NewEventBroadcaster() record.EventBroadcaster {
	return record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{LRUCacheSize: eventCorrelatorCacheSize}))
}

// lister lists from the informer cache without deep-copying what it lists,
// for readers that only look. The state metrics recorder lists every managed
// resource of its kind every few seconds (--poll-state-metric, 5 s) to count
// Ready and Synced conditions: with a copy each time, a thousand rules made
// megabytes of garbage every 5 s, which set the heap's peak and a good part
// of the provider's steady-state CPU. What it lists must not be modified: it
// is the cache's own objects.
type lister struct{ client.Client }

// List lists with client.UnsafeDisableDeepCopy.
func (c lister) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.Client.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...)
}
