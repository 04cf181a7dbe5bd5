package securitypolicy

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// TypeAttached is the condition that says whether the policy protects
// anything: True when a backend service or bucket (or, for a
// CLOUD_ARMOR_NETWORK policy, a network edge security service) uses it,
// False when none does. It is information: an unattached policy is not an
// error (a SecurityPolicyAttachment, or whatever manages the backend,
// attaches it; docs/attach.md).
const TypeAttached xpv2.ConditionType = "Attached"

// Reasons of the Attached condition.
const (
	ReasonAttached xpv2.ConditionReason = "Attached"
	// ReasonUnattached: no backend service names the policy.
	ReasonUnattached xpv2.ConditionReason = "Unattached"
	// ReasonNoEdgeSecurityService: no network edge security service of the
	// policy's region applies the CLOUD_ARMOR_NETWORK policy, which does
	// nothing until one does.
	ReasonNoEdgeSecurityService xpv2.ConditionReason = "NoEdgeSecurityService"
	// ReasonUsersUnknown: the project's backend services, backend buckets
	// or edge services could not be listed.
	ReasonUsersUnknown xpv2.ConditionReason = "UsersUnknown"
)

// maxUsers is how many users status.atProvider.usedBy lists.
const maxUsers = 50

// usersFn lists the users of the policies of a project.
type usersFn func(ctx context.Context, project string) (gcp.PolicyUsers, error)

// reportUsers sets status.atProvider.usedBy and the Attached condition of
// cr, whose GCP policy is key and of type typ (as GCP reports it). The
// users come from one aggregated list per project and poll interval, kept
// by the Client and shared by every policy of the project: reading them
// costs a policy nothing more than its own GET.
func (e *external) reportUsers(ctx context.Context, cr *v1beta1.SecurityPolicy, typ string) {
	var list usersFn
	switch typ {
	case "", "CLOUD_ARMOR":
		list = e.projects.Users
	case "CLOUD_ARMOR_EDGE":
		// Backend buckets take edge policies only: read them for those.
		list = e.edgeUsers
	case "CLOUD_ARMOR_NETWORK":
		list = e.projects.EdgeServices
	default:
		// An internal service policy is used by service mesh routes,
		// which are not read.
		return
	}
	users, err := list(ctx, e.key.Project)
	if err != nil {
		cr.SetConditions(attachedCondition(e.key, typ, nil, err))
		return
	}
	of := users.Of(e.key)
	n := len(of)
	cr.Status.AtProvider.UsedByCount = &n
	for _, u := range of[:min(len(of), maxUsers)] {
		cr.Status.AtProvider.UsedBy = append(cr.Status.AtProvider.UsedBy, v1beta1.PolicyUserObservation{Name: u.Name, Field: u.Field})
	}
	cr.SetConditions(attachedCondition(e.key, typ, of, nil))
}

// edgeUsers are the backend services and the backend buckets of a
// project, by the policy they use.
func (e *external) edgeUsers(ctx context.Context, project string) (gcp.PolicyUsers, error) {
	services, err := e.projects.Users(ctx, project)
	if err != nil {
		return nil, err
	}
	buckets, err := e.projects.Buckets(ctx, project)
	if err != nil {
		return nil, err
	}
	out := gcp.PolicyUsers{}
	for k, v := range services {
		out[k] = append(out[k], v...)
	}
	for k, v := range buckets {
		// Names sort backendBuckets before backendServices: appended
		// after them, the list stays sorted by name.
		out[k] = append(append([]gcp.PolicyUser(nil), v...), out[k]...)
	}
	return out, nil
}

// attachedCondition is the Attached condition of policy key, of type typ,
// used by users (or whose users could not be read: err). Messages depend
// only on the users, which are sorted, so the condition changes only when
// they do.
func attachedCondition(key gcp.PolicyKey, typ string, users []gcp.PolicyUser, err error) xpv2.Condition {
	c := xpv2.Condition{Type: TypeAttached, LastTransitionTime: metav1.Now()}
	what := "backend services"
	switch typ {
	case "CLOUD_ARMOR_NETWORK":
		what = "network edge security services"
	case "CLOUD_ARMOR_EDGE":
		what = "backend services and buckets"
	}
	switch {
	case err != nil:
		c.Status, c.Reason = corev1.ConditionUnknown, ReasonUsersUnknown
		c.Message = fmt.Sprintf("Cannot list the %s of project %s to say what uses this policy: %s", what, key.Project, strings.Join(strings.Fields(err.Error()), " "))
	case len(users) > 0:
		names := make([]string, 0, min(len(users), 3))
		for _, u := range users[:min(len(users), 3)] {
			names = append(names, u.Name+" ("+u.Field+")")
		}
		more := ""
		if n := len(users) - len(names); n > 0 {
			more = fmt.Sprintf(" and %d more", n)
		}
		c.Status, c.Reason = corev1.ConditionTrue, ReasonAttached
		c.Message = fmt.Sprintf("Used by %d of the project's %s: %s%s", len(users), what, strings.Join(names, ", "), more)
	case typ == "CLOUD_ARMOR_NETWORK":
		c.Status, c.Reason = corev1.ConditionFalse, ReasonNoEdgeSecurityService
		c.Message = fmt.Sprintf("No network edge security service in region %s applies this policy: a CLOUD_ARMOR_NETWORK policy does nothing until one does. "+
			"Create a NetworkEdgeSecurityService in region %s whose securityPolicyRef names this policy (it needs Cloud Armor Enterprise)", key.Region, key.Region)
	case typ == "CLOUD_ARMOR_EDGE":
		c.Status, c.Reason = corev1.ConditionFalse, ReasonUnattached
		c.Message = fmt.Sprintf("No backend service or backend bucket names this policy in its edgeSecurityPolicy, so it protects nothing: "+
			"attach it to a backend bucket or a global backend service of project %s with a SecurityPolicyAttachment (field: edgeSecurityPolicy)", key.Project)
	default:
		c.Status, c.Reason = corev1.ConditionFalse, ReasonUnattached
		scope, flag := "global", "--global"
		if key.Region != "" {
			scope, flag = "region "+key.Region, "--region "+key.Region
		}
		c.Message = fmt.Sprintf("No backend service uses this policy, so it protects nothing: attach it to a backend service (%s) of project %s, "+
			"with its securityPolicy field (gcloud compute backend-services update NAME %s --security-policy %s)", scope, key.Project, flag, key.Name)
	}
	return c
}
