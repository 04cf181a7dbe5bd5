package gcptest

import (
	"context"
	"strings"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// EdgeServices is a gcp.EdgeServiceClient whose methods call the XxxFn
// fields and record every call in Calls (Policy is the service's key, Mask
// the patch's update mask), as Policies does. A method without a function
// fails the call.
type EdgeServices struct {
	GetFn            func() (*compute.NetworkEdgeSecurityService, error)
	InsertFn         func(s *compute.NetworkEdgeSecurityService) error
	ValidateInsertFn func(s *compute.NetworkEdgeSecurityService) error
	PatchFn          func(s *compute.NetworkEdgeSecurityService, mask []string) error
	DeleteFn         func() error

	Calls []Call
}

var _ gcp.EdgeServiceClient = &EdgeServices{}

// Methods returns the calls made, in order, as "Get" or, for Patch,
// "Patch description,securityPolicy".
func (f *EdgeServices) Methods() []string {
	out := make([]string, 0, len(f.Calls))
	for _, c := range f.Calls {
		if c.Method == "Patch" {
			out = append(out, "Patch "+strings.Join(c.Mask, ","))
			continue
		}
		out = append(out, c.Method)
	}
	return out
}

// Writes returns the calls made other than Get and ValidateInsert.
func (f *EdgeServices) Writes() []string {
	var out []string
	for _, m := range f.Methods() {
		if m != "Get" && m != "ValidateInsert" {
			out = append(out, m)
		}
	}
	return out
}

// Get calls GetFn.
func (f *EdgeServices) Get(_ context.Context, k gcp.EdgeServiceKey) (*compute.NetworkEdgeSecurityService, error) {
	f.Calls = append(f.Calls, Call{Method: "Get", Policy: k.String()})
	if f.GetFn == nil {
		return nil, unexpected("Get")
	}
	return f.GetFn()
}

// Insert calls InsertFn.
func (f *EdgeServices) Insert(_ context.Context, k gcp.EdgeServiceKey, s *compute.NetworkEdgeSecurityService) error {
	f.Calls = append(f.Calls, Call{Method: "Insert", Policy: k.String()})
	if f.InsertFn == nil {
		return unexpected("Insert")
	}
	return f.InsertFn(s)
}

// ValidateInsert calls ValidateInsertFn.
func (f *EdgeServices) ValidateInsert(_ context.Context, k gcp.EdgeServiceKey, s *compute.NetworkEdgeSecurityService) error {
	f.Calls = append(f.Calls, Call{Method: "ValidateInsert", Policy: k.String()})
	if f.ValidateInsertFn == nil {
		return unexpected("ValidateInsert")
	}
	return f.ValidateInsertFn(s)
}

// Patch calls PatchFn.
func (f *EdgeServices) Patch(_ context.Context, k gcp.EdgeServiceKey, s *compute.NetworkEdgeSecurityService, updateMask string) error {
	mask := strings.Split(updateMask, ",")
	f.Calls = append(f.Calls, Call{Method: "Patch", Policy: k.String(), Mask: mask})
	if f.PatchFn == nil {
		return unexpected("Patch")
	}
	return f.PatchFn(s, mask)
}

// Delete calls DeleteFn.
func (f *EdgeServices) Delete(_ context.Context, k gcp.EdgeServiceKey) error {
	f.Calls = append(f.Calls, Call{Method: "Delete", Policy: k.String()})
	if f.DeleteFn == nil {
		return unexpected("Delete")
	}
	return f.DeleteFn()
}
