package addressset

import (
	"context"
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
)

// errNoConfigRef: the instances are listed with a ProviderConfig's
// credentials, never the provider's own.
const errNoConfigRef = "spec.providerConfigRef is required to list instances: they are listed with that ProviderConfig's credentials"

// instanceListTimeout bounds one list: a project that answers slowly must
// not keep its set's last addresses from being retried.
const instanceListTimeout = 15 * time.Second

// connectFn returns what lists the instances of as, and the project of its
// ProviderConfig.
type connectFn func(ctx context.Context, as *v1alpha1.AddressSet) (gcp.InstanceClient, string, error)

// instances reads Compute Engine instances by label: one
// instances.aggregatedList per AddressSet per poll, what it found kept in
// memory between polls, so a reconcile woken by anything else costs no call
// to GCP.
type instances struct {
	connect connectFn
	now     func() time.Time
	timeout time.Duration // of one list

	// wake, when set, has every poll run outside the reconcile, in a
	// goroutine of its own that wakes the set when it is done: a project
	// that answers slowly holds no controller worker. ctx ends those
	// polls. Nil polls within Read.
	wake func(types.NamespacedName)
	ctx  context.Context

	mu   sync.Mutex
	sets map[types.NamespacedName]*instanceSet
}

// instanceSet is what one AddressSet's polls found.
type instanceSet struct {
	// selector is what was polled; another one polls at once.
	selector string
	polled   time.Time
	last     Collected
	// zones are the instances last seen, by scope ("zones/z"): a zone GCP
	// cannot list for a while keeps them.
	zones map[string][]gcp.Instance
	// failing is the outage the last poll is part of, nil when it answered.
	failing *Unreadable
	// polling says a poll runs in the background (instances.wake).
	polling bool
}

// newInstances returns the reader of instances that polls in the
// background until ctx ends, waking a set with wake when its poll ends.
func newInstances(ctx context.Context, c *connector.Connector, wake func(types.NamespacedName)) *instances {
	i := newInstanceReader(func(ctx context.Context, as *v1alpha1.AddressSet) (gcp.InstanceClient, string, error) {
		var named string
		if as.Spec.Instances != nil {
			named = as.Spec.Instances.Project
		}
		client, project, err := connectProject(ctx, c, as, named)
		if err != nil {
			return nil, "", err
		}
		return client.Instances(), project, nil
	}, time.Now)
	i.ctx, i.wake = ctx, wake
	return i
}

// connectProject connects with as's ProviderConfig and returns the project
// to read: named, or the config's when named is empty. A project the config
// does not let as's namespace name is refused here, before GCP is asked.
func connectProject(ctx context.Context, c *connector.Connector, as *v1alpha1.AddressSet, named string) (*gcp.Client, string, error) {
	conn, _, err := c.ConnectNamespace(ctx, as.GetNamespace(), as.Spec.ProviderConfigRef)
	if err != nil {
		return nil, "", err
	}
	var n *string
	if named != "" {
		n = &named
	}
	project, err := conn.ProjectOr(n)
	if err != nil {
		return nil, "", err
	}
	return conn.Client, project, nil
}

func newInstanceReader(connect connectFn, now func() time.Time) *instances {
	return &instances{connect: connect, now: now, timeout: instanceListTimeout, sets: map[types.NamespacedName]*instanceSet{}}
}

// Read returns what the last poll found while it is younger than the poll
// interval, else polls. The delay is the time left until the next poll.
func (i *instances) Read(ctx context.Context, as *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	sel := as.Spec.Instances
	if as.Spec.ProviderConfigRef == nil {
		return Collected{}, 0, errors.New(errNoConfigRef)
	}
	// A filter GCP would refuse is the user's to fix, not an outage.
	if _, err := gcp.LabelFilter(sel.MatchLabels); err != nil {
		return Collected{}, 0, errors.Wrap(err, "spec.instances.matchLabels")
	}
	s := i.set(client.ObjectKeyFromObject(as), selectorOf(as))
	if i.wake != nil {
		return i.readPolled(client.ObjectKeyFromObject(as), as, s)
	}
	now := i.now()
	if !s.polled.IsZero() && now.Sub(s.polled) < sel.Poll() {
		return s.answer(s.polled.Add(sel.Poll()).Sub(now))
	}
	lister, project, err := i.connect(ctx, as)
	if sel.Project != "" {
		project = sel.Project
	}
	if err != nil {
		// Nothing was asked of GCP: the ProviderConfig is the user's to fix
		// (one that does not admit the namespace, say). The set keeps what
		// it had and says why, as in an outage, so that the allowlist shows
		// it rather than wait for a set that never reports.
		s.polled = now
		s.fail(project, sel, errors.Wrap(err, "cannot connect to GCP to list instances"), now)
		return s.answer(sel.Poll())
	}
	lctx, cancel := context.WithTimeout(ctx, min(i.timeout, sel.Poll()))
	defer cancel()
	s.poll(lctx, lister, project, sel, now)
	return s.answer(sel.Poll())
}

// readPolled answers from what the background polls found, and starts
// one when it is due: the set's last answer stands meanwhile (Pending
// before its first), and the poll wakes the set when it ends.
func (i *instances) readPolled(key types.NamespacedName, as *v1alpha1.AddressSet, s *instanceSet) (Collected, time.Duration, error) {
	poll := as.Spec.Instances.Poll()
	i.mu.Lock()
	defer i.mu.Unlock()
	now := i.now()
	if !s.polling && (s.polled.IsZero() || now.Sub(s.polled) >= poll) {
		s.polling = true
		go i.pollInBackground(key, as.DeepCopy(), s, now)
	}
	if s.polled.IsZero() {
		// Looked at again in case the wake is lost; the poll's end wakes it sooner.
		return Collected{}, 0, &Pending{After: i.timeout + time.Second}
	}
	if s.polling {
		return s.answer(poll)
	}
	return s.answer(max(s.polled.Add(poll).Sub(now), time.Second))
}

// pollInBackground polls once for key, as Read does, records what it
// found in s unless key has been forgotten or reads something else since,
// and wakes the set.
func (i *instances) pollInBackground(key types.NamespacedName, as *v1alpha1.AddressSet, s *instanceSet, now time.Time) {
	sel := as.Spec.Instances
	ctx, cancel := context.WithTimeout(i.ctx, min(i.timeout, sel.Poll()))
	defer cancel()
	lister, project, err := i.connect(ctx, as)
	if sel.Project != "" {
		project = sel.Project
	}
	var got gcp.Instances
	if err != nil {
		err = errors.Wrap(err, "cannot connect to GCP to list instances")
	} else {
		got, err = lister.List(ctx, project, sel.MatchLabels)
	}
	i.mu.Lock()
	current := i.sets[key] == s
	if current {
		s.polling, s.polled = false, now
		s.record(project, sel, got, err, now)
	}
	i.mu.Unlock()
	if current && i.ctx.Err() == nil {
		i.wake(key)
	}
}

// set returns the state of key, new when key selects something else now.
// The caller changes it without the lock: the controller reconciles one
// key at a time, and Forget comes from that same reconcile.
func (i *instances) set(key types.NamespacedName, selector string) *instanceSet {
	i.mu.Lock()
	defer i.mu.Unlock()
	s, ok := i.sets[key]
	if !ok || s.selector != selector {
		s = &instanceSet{selector: selector}
		i.sets[key] = s
	}
	return s
}

// selectorOf identifies what as polls: a change of any of it polls at once.
func selectorOf(as *v1alpha1.AddressSet) string {
	sel, ref := as.Spec.Instances, as.Spec.ProviderConfigRef
	return fmt.Sprintf("%s|%s|%t|%s/%s", sel.Project, labelsString(sel.MatchLabels), sel.IncludeInternalIP, ref.Kind, ref.Name)
}

// poll lists the instances once and keeps the result, or the outage.
func (s *instanceSet) poll(ctx context.Context, lister gcp.InstanceClient, project string, sel *v1alpha1.InstanceSelector, now time.Time) {
	s.polled = now
	got, err := lister.List(ctx, project, sel.MatchLabels)
	s.record(project, sel, got, err, now)
}

// record keeps what a poll found, or the outage it is part of.
func (s *instanceSet) record(project string, sel *v1alpha1.InstanceSelector, got gcp.Instances, err error, now time.Time) {
	if err != nil {
		s.fail(project, sel, err, now)
		return
	}
	s.failing = nil
	s.zones = keepUnreachable(got, s.zones)
	s.last = CollectInstances(slices.Concat(mapValues(s.zones)...), sel.IncludeInternalIP)
}

// fail records a poll that got no answer: the outage it begins, or err as
// its latest error. project is "" when the ProviderConfig could not say.
func (s *instanceSet) fail(project string, sel *v1alpha1.InstanceSelector, err error, now time.Time) {
	if s.failing == nil {
		what := "the instances"
		if project != "" {
			what += " of project " + project
		}
		s.failing = &Unreadable{Source: what + " labelled " + labelsString(sel.MatchLabels), Since: now}
	}
	s.failing.Err = err
}

// answer is what the set holds now, due again after.
func (s *instanceSet) answer(after time.Duration) (Collected, time.Duration, error) {
	if s.failing != nil {
		u := *s.failing
		u.After = after
		return Collected{}, after, &u
	}
	return s.last, after, nil
}

// keepUnreachable returns got's instances by zone, with the instances a
// zone held before for every zone GCP could not list this time: missing
// from the answer is not gone.
func keepUnreachable(got gcp.Instances, before map[string][]gcp.Instance) map[string][]gcp.Instance {
	out := map[string][]gcp.Instance{}
	for _, in := range got.Items {
		out["zones/"+in.Zone] = append(out["zones/"+in.Zone], in)
	}
	for _, z := range got.Unreachable {
		if _, ok := out[z]; !ok && len(before[z]) > 0 {
			out[z] = before[z]
		}
	}
	return out
}

func (i *instances) Forget(key types.NamespacedName) {
	i.mu.Lock()
	defer i.mu.Unlock()
	delete(i.sets, key)
}

// CollectInstances gathers the addresses of instances (already selected by
// label): the external ones, and the internal ones too when internal is
// set, of every RUNNING instance. An instance in any other status has no
// address in use (a stopped one gives its ephemeral address back); it is
// counted and listed as skipped, with why, as are instances without a
// usable address.
func CollectInstances(in []gcp.Instance, internal bool) Collected {
	out := newCollector(len(in))
	for _, i := range in {
		addrs, why := instanceAddresses(i, internal)
		if why != "" {
			out.skip(i.Zone+"/"+i.Name, why)
			continue
		}
		out.add(addrs)
	}
	return out.done()
}

// instanceAddresses are the addresses of i the set holds, or why it holds
// none.
func instanceAddresses(i gcp.Instance, internal bool) ([]netip.Prefix, string) {
	addrs := i.External
	if internal {
		addrs = slices.Concat(i.External, i.Internal)
	}
	switch {
	case i.Status != gcp.StatusRunning:
		return nil, "status " + i.Status + ": not RUNNING, no address in use"
	case len(i.Invalid) > 0:
		return nil, "invalid address: " + strings.Join(i.Invalid, ", ")
	case len(addrs) == 0 && internal:
		return nil, "no external or internal address"
	case len(addrs) == 0:
		return nil, "no external address (accessConfigs natIP or ipv6AccessConfigs externalIpv6)"
	}
	return addrs, ""
}

// labelsString is k=v,k2=v2, sorted by key.
func labelsString(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for k, v := range l {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// mapValues are m's values, in key order.
func mapValues[V any](m map[string]V) []V {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]V, len(keys))
	for n, k := range keys {
		out[n] = m[k]
	}
	return out
}
