package addressset

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// A Reader reads what an AddressSet selects besides the Nodes of the cluster
// the provider runs in: the Nodes of another cluster, Compute Engine
// instances, Cloud NAT, or objects of the set's own namespace.
type Reader interface {
	// Read returns what as selects now, and how soon to read again (0:
	// when the reader wakes the set itself). A *Pending error puts the set
	// off without publishing; an *Unreadable error keeps its last
	// addresses and says so.
	Read(ctx context.Context, as *v1alpha1.AddressSet) (Collected, time.Duration, error)

	// Forget drops what the reader keeps for the AddressSet key: it is
	// gone, or reads another source now.
	Forget(key types.NamespacedName)
}

// Pending is a source read for the first time, not answered yet: the set
// publishes nothing (its readers wait, the rules stay as they are) until it
// answers or becomes Unreadable.
type Pending struct {
	// After is when to look again.
	After time.Duration
}

func (p *Pending) Error() string { return "the source has not been read yet" }

// Unreadable is a source that cannot be read: the set keeps the addresses it
// published last (never an empty set because a cluster or project is out of
// reach) and says which source, since when and the server's own error.
type Unreadable struct {
	// Source names what cannot be read, e.g. "the cluster of Secret
	// team-a/eu-1 (https://10.0.0.1)" or "the instances of project p".
	Source string
	// Since is the first failure of the current outage.
	Since time.Time
	// Err is the API server's or GCP's own error. It must not hold
	// credentials.
	Err error
	// After is when to try again.
	After time.Duration
	// Read, when set, is what the parts of the source that answered hold
	// (some routers of a Cloud NAT source): their addresses are added to the
	// last ones, so a new address is allowed without waiting for the rest.
	// Nothing goes until every part answers.
	Read *Collected
}

func (u *Unreadable) Error() string {
	return fmt.Sprintf("cannot read %s since %s: %v; the addresses shown are the last known", u.Source, u.Since.UTC().Format(time.RFC3339), u.Err)
}

func (u *Unreadable) Unwrap() error { return u.Err }
