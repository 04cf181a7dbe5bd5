// Package securitypolicy manages SecurityPolicy objects: a Cloud Armor
// policy, its top-level settings, its default rule and, when the spec lists
// them, its inline rules.
package securitypolicy

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/securitypolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/connector"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// Error strings.
const (
	errConnect      = "cannot connect to GCP"
	errGetPolicy    = "cannot get security policy"
	errInsertPolicy = "cannot create security policy"
	errDeletePolicy = "cannot delete security policy"
	errClaims       = "cannot list SecurityPolicyRules that claim rules of this policy"
)

// Setup adds a controller that reconciles SecurityPolicies.
func Setup(mgr ctrl.Manager, o setup.Options) error {
	name := managed.ControllerName(v1beta1.SecurityPolicyGroupKind)
	if err := indexRulesByPolicy(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := indexPoliciesByKey(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	fresh := setup.NewReadYourWrites(mgr.GetClient(), func() *v1beta1.SecurityPolicy { return &v1beta1.SecurityPolicy{} })
	mgr = fresh.Manager(mgr)
	c := &connecter{conn: o.Connector, kube: mgr.GetClient()}
	opts := append(o.ReconcilerOptions(mgr, name),
		managed.WithTypedExternalConnector(setup.FinalizeWithCreate[*v1beta1.SecurityPolicy](c)))
	r := managed.NewReconciler(mgr, resource.ManagedKind(v1beta1.SecurityPolicyGroupVersionKind), opts...)
	return o.Complete(mgr, name, &v1beta1.SecurityPolicy{}, &v1beta1.SecurityPolicyList{}, r, fresh, watchRules(mgr.GetClient()))
}

// SetupGated registers Setup to run once the SecurityPolicy and
// SecurityPolicyRule CRDs exist (the controller indexes and watches rules).
func SetupGated(mgr ctrl.Manager, o setup.Options) error {
	o.Gate.Register(func() {
		if err := Setup(mgr, o); err != nil {
			panic(errors.Wrap(err, "cannot set up SecurityPolicy controller"))
		}
	}, v1beta1.SecurityPolicyGroupVersionKind, v1beta1.SecurityPolicyRuleGroupVersionKind)
	return nil
}

type connecter struct {
	conn *connector.Connector
	kube client.Reader
}

func (c *connecter) Connect(ctx context.Context, cr *v1beta1.SecurityPolicy) (managed.TypedExternalClient[*v1beta1.SecurityPolicy], error) {
	conn, err := c.conn.Connect(ctx, cr)
	if err != nil {
		return nil, errors.Wrap(err, errConnect)
	}
	p := cr.Spec.ForProvider
	return &external{policies: conn.Policies(p.Project, p.Region),
		claims: &claimLister{kube: c.kube, project: conn.ProjectOr(p.Project)}}, nil
}

// external manages one policy. Rules at priorities claimed by
// SecurityPolicyRule objects are never written here.
type external struct {
	policies gcp.PolicyClient
	claims   claimsFn
}

// claimsFn returns the priorities SecurityPolicyRule objects claim in cr's
// GCP policy.
type claimsFn interface {
	Claims(ctx context.Context, cr *v1beta1.SecurityPolicy) (securitypolicy.Claims, error)
}

func (e *external) Observe(ctx context.Context, cr *v1beta1.SecurityPolicy) (managed.ExternalObservation, error) {
	sp, err := e.policies.Get(ctx, meta.GetExternalName(cr))
	if gcp.IsNotFound(err) {
		return managed.ExternalObservation{ResourceExists: false}, nil
	}
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errGetPolicy)
	}
	cr.Status.AtProvider = securitypolicy.GenerateObservation(sp)
	cr.SetConditions(xpv2.Available())

	claims, err := e.claims.Claims(ctx, cr)
	if err != nil {
		return managed.ExternalObservation{}, errors.Wrap(err, errClaims)
	}
	d := diff(cr.Spec.ForProvider, sp, claims)
	cr.SetConditions(conflictCondition(d.plan.Conflicts, d.defaultClaimedBy))
	return managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: d.upToDate(), Diff: d.String()}, nil
}

func (e *external) Create(ctx context.Context, cr *v1beta1.SecurityPolicy) (managed.ExternalCreation, error) {
	claims, err := e.claims.Claims(ctx, cr)
	if err != nil {
		return managed.ExternalCreation{}, errors.Wrap(err, errClaims)
	}
	err = e.policies.Insert(ctx, securitypolicy.GeneratePolicy(meta.GetExternalName(cr), withImplicitDefault(unclaimed(cr.Spec.ForProvider, claims))))
	// A policy that already exists under our deterministic name is ours to
	// adopt: the next Observe compares it with the spec.
	return managed.ExternalCreation{}, errors.Wrap(resource.Ignore(gcp.IsAlreadyExists, err), errInsertPolicy)
}

func (e *external) Update(ctx context.Context, cr *v1beta1.SecurityPolicy) (managed.ExternalUpdate, error) {
	claims, err := e.claims.Claims(ctx, cr)
	if err != nil {
		return managed.ExternalUpdate{}, errors.Wrap(err, errClaims)
	}
	return managed.ExternalUpdate{}, e.update(ctx, meta.GetExternalName(cr), cr.Spec.ForProvider, claims)
}

func (e *external) Delete(ctx context.Context, cr *v1beta1.SecurityPolicy) (managed.ExternalDelete, error) {
	err := e.policies.Delete(ctx, meta.GetExternalName(cr))
	return managed.ExternalDelete{}, errors.Wrap(resource.Ignore(gcp.IsNotFound, err), errDeletePolicy)
}

func (e *external) Disconnect(_ context.Context) error { return nil }

// unclaimed returns p without inline rules (or default rule) at priorities a
// SecurityPolicyRule claims, for the body of insert.
func unclaimed(p v1beta1.SecurityPolicyParameters, claims securitypolicy.Claims) v1beta1.SecurityPolicyParameters {
	out := *p.DeepCopy()
	// Keep [] apart from unset: rules: [] means "own every unclaimed
	// priority", unset means "hands off", even when every rule is claimed.
	out.Rules = out.Rules[:0:0]
	for _, r := range p.Rules {
		if _, ok := claims[r.Priority]; !ok {
			out.Rules = append(out.Rules, r)
		}
	}
	if _, ok := claims[v1beta1.DefaultRulePriority]; ok {
		out.DefaultRule = nil
	}
	return out
}

// withImplicitDefault spells out GCP's implicit "allow *" default rule when p
// has inline rules but no default rule: GCP refuses an insert whose rules
// lack a default rule, yet adds exactly this one to an insert without rules.
func withImplicitDefault(p v1beta1.SecurityPolicyParameters) v1beta1.SecurityPolicyParameters {
	if p.DefaultRule == nil && len(p.Rules) > 0 {
		p.DefaultRule = &v1beta1.RuleParameters{Action: v1beta1.ActionAllow}
	}
	return p
}
