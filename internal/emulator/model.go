package emulator

import (
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// apiRoot is the host GCP puts in every selfLink, whatever host was called.
const apiRoot = core.ComputeRoot

// A scope is where a compute object lives: see core.Scope.
type scope = core.Scope

// An operation is a compute Operation for one mutation.
type operation struct {
	ID         uint64    `json:"id"`
	Name       string    `json:"name"`
	Scope      scope     `json:"scope"`
	Type       string    `json:"type"`
	TargetLink string    `json:"targetLink"`
	TargetID   uint64    `json:"targetId"`
	User       string    `json:"user"`
	Inserted   time.Time `json:"inserted"`
	Done       time.Time `json:"done"` // when it reports DONE
	Err        *opError  `json:"err,omitempty"`
	Policy     string    `json:"policy"` // path of the target policy, for stats
	// Parent is organizations/N or folders/N for a global organization
	// operation, which belongs to no project; "" otherwise.
	Parent string `json:"parent,omitempty"`
}

// path is the operation's path: projects/P/global/operations/N,
// projects/P/regions/R/operations/N, or locations/global/operations/N for
// a global organization operation.
func (o *operation) path() string {
	if o.Parent != "" {
		return orgOpPath(o.Name)
	}
	return o.Scope.OpPath(o.Name)
}

// An opError is the error a finished operation carries.
type opError = core.OpError

func (o *operation) done(now time.Time) bool { return !now.Before(o.Done) }
