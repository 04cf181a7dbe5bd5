package gcptest

import (
	"context"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// Projects is a gcp.ProjectClient whose methods call the XxxFn fields and
// record every call in Calls ("FreshTier p", "SetTier p CA_STANDARD"). A
// method without a function fails the call.
type Projects struct {
	TierFn         func(project string) (string, error)
	FreshTierFn    func(project string) (string, error)
	SetTierFn      func(project, tier string) error
	UsersFn        func(project string) (gcp.PolicyUsers, error)
	EdgeServicesFn func(project string) (gcp.PolicyUsers, error)
	BucketsFn      func(project string) (gcp.PolicyUsers, error)

	Calls []string
}

var _ gcp.ProjectClient = &Projects{}

// Tier calls TierFn.
func (f *Projects) Tier(_ context.Context, project string) (string, error) {
	f.Calls = append(f.Calls, "Tier "+project)
	if f.TierFn == nil {
		return "", unexpected("Tier")
	}
	return f.TierFn(project)
}

// FreshTier calls FreshTierFn.
func (f *Projects) FreshTier(_ context.Context, project string) (string, error) {
	f.Calls = append(f.Calls, "FreshTier "+project)
	if f.FreshTierFn == nil {
		return "", unexpected("FreshTier")
	}
	return f.FreshTierFn(project)
}

// SetTier calls SetTierFn.
func (f *Projects) SetTier(_ context.Context, project, tier string) error {
	f.Calls = append(f.Calls, "SetTier "+project+" "+tier)
	if f.SetTierFn == nil {
		return unexpected("SetTier")
	}
	return f.SetTierFn(project, tier)
}

// Users calls UsersFn.
func (f *Projects) Users(_ context.Context, project string) (gcp.PolicyUsers, error) {
	f.Calls = append(f.Calls, "Users "+project)
	if f.UsersFn == nil {
		return nil, unexpected("Users")
	}
	return f.UsersFn(project)
}

// EdgeServices calls EdgeServicesFn.
func (f *Projects) EdgeServices(_ context.Context, project string) (gcp.PolicyUsers, error) {
	f.Calls = append(f.Calls, "EdgeServices "+project)
	if f.EdgeServicesFn == nil {
		return nil, unexpected("EdgeServices")
	}
	return f.EdgeServicesFn(project)
}

// Buckets calls BucketsFn.
func (f *Projects) Buckets(_ context.Context, project string) (gcp.PolicyUsers, error) {
	f.Calls = append(f.Calls, "Buckets "+project)
	if f.BucketsFn == nil {
		return nil, unexpected("Buckets")
	}
	return f.BucketsFn(project)
}
