package addressset

import (
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// Published is what an AddressSet offers its readers at this moment: the
// addresses its Nodes have (a shrink held back included), and what its status
// will say once written.
type Published struct {
	// UID and Generation of the AddressSet the addresses follow.
	UID        types.UID
	Generation int64
	// Addresses are canonical prefixes, sorted, IPv4 first: hosts, or
	// wider from a namespace source.
	Addresses []string
	// Nodes is how many Nodes the selector matches.
	Nodes int
	// Skipped names up to MaxSkippedListed Nodes left out; SkippedCount
	// counts them all.
	Skipped      []v1alpha1.SkippedNode
	SkippedCount int
	// Warnings need someone but leave no address out (a Cloud NAT short of
	// addresses).
	Warnings []string
	// Held says why the set keeps addresses its Nodes no longer have (a
	// shrink held back, Nodes it may not read); "" when it keeps none.
	Held string
	// Unreadable says Held is because the source cannot be read.
	Unreadable bool

	// The shrink hold's memory, kept here so that a status written at a
	// bounded rate never makes it forget.
	peak       *v1alpha1.AddressPeak
	heldShrink *v1alpha1.HeldShrink
}

// Registry holds every AddressSet's published addresses in memory, so that
// the controllers that write them to GCP follow Nodes without waiting for an
// AddressSet's status to be written, and without that status write being
// what wakes them. The AddressSet controller is its only writer.
type Registry struct {
	mu   sync.RWMutex
	sets map[types.NamespacedName]Published
	subs []func(types.NamespacedName)
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry {
	return &Registry{sets: map[types.NamespacedName]Published{}}
}

// Get returns what the AddressSet key publishes, and false when it has not
// published since the provider started (its readers then wait: an AddressSet
// not computed yet is not an empty one).
func (r *Registry) Get(key types.NamespacedName) (Published, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.sets[key]
	return p, ok
}

// Subscribe calls fn, after each change, with the key of the AddressSet that
// changed. fn must not block: controllers add to their queue.
func (r *Registry) Subscribe(fn func(types.NamespacedName)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.subs = append(r.subs, fn)
}

// publish records p for key and tells the subscribers when it differs from
// what key published before.
func (r *Registry) publish(key types.NamespacedName, p Published) {
	r.mu.Lock()
	old, ok := r.sets[key]
	r.sets[key] = p
	subs := r.subs
	r.mu.Unlock()
	if ok && samePublication(old, p) {
		return
	}
	for _, fn := range subs {
		fn(key)
	}
}

// forget drops key (the AddressSet is gone) and tells the subscribers.
func (r *Registry) forget(key types.NamespacedName) {
	r.mu.Lock()
	_, ok := r.sets[key]
	delete(r.sets, key)
	subs := r.subs
	r.mu.Unlock()
	if !ok {
		return
	}
	for _, fn := range subs {
		fn(key)
	}
}

// samePublication reports whether readers would see no difference.
func samePublication(a, b Published) bool {
	return a.UID == b.UID && a.Generation == b.Generation && a.Nodes == b.Nodes &&
		a.SkippedCount == b.SkippedCount && a.Held == b.Held && a.Unreadable == b.Unreadable &&
		slices.Equal(a.Addresses, b.Addresses) && slices.Equal(a.Skipped, b.Skipped) && slices.Equal(a.Warnings, b.Warnings)
}
