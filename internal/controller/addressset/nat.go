package addressset

import (
	"context"
	"fmt"
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

// errNoNATConfigRef: Cloud NAT is read with a ProviderConfig's
// credentials, never the provider's own.
const errNoNATConfigRef = "spec.providerConfigRef is required to read Cloud NAT: it is read with that ProviderConfig's credentials"

// natConnectFn returns what reads the Cloud NAT of as, and the project of
// its ProviderConfig.
type natConnectFn func(ctx context.Context, as *v1alpha1.AddressSet) (gcp.NATClient, string, error)

// nats reads Cloud NAT gateways: per AddressSet per poll, one routers.list
// per region of a network and one routers.getRouterStatus per router, what
// they found kept in memory between polls, so a reconcile woken by anything
// else costs no call to GCP. It polls as instances does.
type nats struct {
	connect natConnectFn
	now     func() time.Time
	timeout time.Duration // of one poll, every call of it

	// wake and ctx: as instances'; nil wake polls within Read.
	wake func(types.NamespacedName)
	ctx  context.Context

	mu   sync.Mutex
	sets map[types.NamespacedName]*natSet
}

// natSet is what one AddressSet's polls found.
type natSet struct {
	// selector is what was polled; another one polls at once.
	selector string
	polled   time.Time
	polling  bool
	// routers are the NATs last read of each router, by "region/router": a
	// router (or a region's list) GCP cannot answer for a while keeps them.
	routers map[string][]gcp.NAT
	// fresh says the last poll read at least one router.
	fresh   bool
	last    Collected
	failing *Unreadable
}

// newNATs returns the reader of Cloud NAT that polls in the background
// until ctx ends, waking a set with wake when its poll ends.
func newNATs(ctx context.Context, c *connector.Connector, wake func(types.NamespacedName)) *nats {
	n := newNATReader(func(ctx context.Context, as *v1alpha1.AddressSet) (gcp.NATClient, string, error) {
		var named string
		if as.Spec.NAT != nil {
			named = as.Spec.NAT.Project
		}
		client, project, err := connectProject(ctx, c, as, named)
		if err != nil {
			return nil, "", err
		}
		return client.NATs(), project, nil
	}, time.Now)
	n.ctx, n.wake = ctx, wake
	return n
}

func newNATReader(connect natConnectFn, now func() time.Time) *nats {
	return &nats{connect: connect, now: now, timeout: instanceListTimeout, sets: map[types.NamespacedName]*natSet{}}
}

// Read returns what the last poll found while it is younger than the poll
// interval, else polls. The delay is the time left until the next poll.
func (n *nats) Read(ctx context.Context, as *v1alpha1.AddressSet) (Collected, time.Duration, error) {
	sel := as.Spec.NAT
	if as.Spec.ProviderConfigRef == nil {
		return Collected{}, 0, errors.New(errNoNATConfigRef)
	}
	// Admission refuses these; an API server without the CRD's rules does not.
	if err := validNAT(sel); err != nil {
		return Collected{}, 0, err
	}
	key := client.ObjectKeyFromObject(as)
	s := n.set(key, natSelectorOf(as))
	if n.wake != nil {
		return n.readPolled(key, as, s)
	}
	now := n.now()
	if !s.polled.IsZero() && now.Sub(s.polled) < sel.Poll() {
		return s.answer(s.polled.Add(sel.Poll()).Sub(now))
	}
	s.polled = now
	pctx, cancel := context.WithTimeout(ctx, min(n.timeout, sel.Poll()))
	defer cancel()
	s.record(n.poll(pctx, as), sel, now)
	return s.answer(sel.Poll())
}

// validNAT refuses a selector admission would refuse.
func validNAT(sel *v1alpha1.NATSelector) error {
	switch {
	case (sel.Router == "") == (sel.Network == ""):
		return errors.New("spec.nat names exactly one of router and network")
	case sel.Router != "" && sel.Region == "":
		return errors.New("spec.nat.router needs spec.nat.region")
	case sel.Network != "" && len(sel.Regions) == 0:
		return errors.New("spec.nat.network needs spec.nat.regions")
	}
	return nil
}

// readPolled answers from what the background polls found, and starts one
// when it is due, as instances' does.
func (n *nats) readPolled(key types.NamespacedName, as *v1alpha1.AddressSet, s *natSet) (Collected, time.Duration, error) {
	poll := as.Spec.NAT.Poll()
	n.mu.Lock()
	defer n.mu.Unlock()
	now := n.now()
	if !s.polling && (s.polled.IsZero() || now.Sub(s.polled) >= poll) {
		s.polling = true
		go n.pollInBackground(key, as.DeepCopy(), s, now)
	}
	if s.polled.IsZero() {
		// Looked at again in case the wake is lost; the poll's end wakes it sooner.
		return Collected{}, 0, &Pending{After: n.timeout + time.Second}
	}
	if s.polling {
		return s.answer(poll)
	}
	return s.answer(max(s.polled.Add(poll).Sub(now), time.Second))
}

// pollInBackground polls once for key, records what it found in s unless
// key has been forgotten or reads something else since, and wakes the set.
func (n *nats) pollInBackground(key types.NamespacedName, as *v1alpha1.AddressSet, s *natSet, now time.Time) {
	sel := as.Spec.NAT
	ctx, cancel := context.WithTimeout(n.ctx, min(n.timeout, sel.Poll()))
	defer cancel()
	p := n.poll(ctx, as)
	n.mu.Lock()
	current := n.sets[key] == s
	if current {
		s.polling, s.polled = false, now
		s.record(p, sel, now)
	}
	n.mu.Unlock()
	if current && n.ctx.Err() == nil {
		n.wake(key)
	}
}

// set returns the state of key, new when key selects something else now.
func (n *nats) set(key types.NamespacedName, selector string) *natSet {
	n.mu.Lock()
	defer n.mu.Unlock()
	s, ok := n.sets[key]
	if !ok || s.selector != selector {
		s = &natSet{selector: selector}
		n.sets[key] = s
	}
	return s
}

func (n *nats) Forget(key types.NamespacedName) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.sets, key)
}

// natSelectorOf identifies what as polls: a change of any of it polls at once.
func natSelectorOf(as *v1alpha1.AddressSet) string {
	sel, ref := as.Spec.NAT, as.Spec.ProviderConfigRef
	return fmt.Sprintf("%s|%s|%s|%s|%s|%s|%s/%s", sel.Project, sel.Region, sel.Router, sel.NAT, sel.Network,
		strings.Join(sel.Regions, ","), ref.Kind, ref.Name)
}
