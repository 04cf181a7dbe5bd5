package securitypolicy

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"
	corev1 "k8s.io/api/core/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/apivalues"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp/gcptest"
)

func TestReportUsers(t *testing.T) {
	global := gcp.PolicyKey{Project: "p", Name: policyName}
	regional := gcp.PolicyKey{Project: "p", Region: "r", Name: policyName}
	web := gcp.PolicyUser{Name: "projects/p/global/backendServices/web", Field: "securityPolicy"}
	api := gcp.PolicyUser{Name: "projects/p/global/backendServices/api", Field: "securityPolicy"}
	edgeWeb := gcp.PolicyUser{Name: "projects/p/global/backendServices/web", Field: "edgeSecurityPolicy"}
	static := gcp.PolicyUser{Name: "projects/p/global/backendBuckets/static", Field: "edgeSecurityPolicy"}
	ness := gcp.PolicyUser{Name: "projects/p/regions/r/networkEdgeSecurityServices/edge", Field: "securityPolicy"}
	forbidden := &googleapi.Error{Code: http.StatusForbidden, Message: "Required 'compute.backendServices.list' permission for 'projects/p'"}
	one := func(n int) *int { return &n }

	type want struct {
		calls  []string
		usedBy []v1beta1.PolicyUserObservation
		count  *int
		cond   xpv2.Condition
	}
	cases := map[string]struct {
		reason  string
		key     gcp.PolicyKey
		typ     string
		users   gcp.PolicyUsers
		edges   gcp.PolicyUsers
		buckets gcp.PolicyUsers
		err     error
		want    want
	}{
		"Attached": {
			reason: "A policy backend services use lists them, sorted as the list is, and is Attached.",
			key:    global, typ: "CLOUD_ARMOR",
			users: gcp.PolicyUsers{global.String(): {api, web}, "projects/p/global/securityPolicies/other": {web}},
			want: want{calls: []string{"Users p"}, count: one(2),
				usedBy: []v1beta1.PolicyUserObservation{{Name: api.Name, Field: api.Field}, {Name: web.Name, Field: web.Field}},
				cond: xpv2.Condition{Type: TypeAttached, Status: corev1.ConditionTrue, Reason: ReasonAttached,
					Message: "Used by 2 of the project's backend services: projects/p/global/backendServices/api (securityPolicy), projects/p/global/backendServices/web (securityPolicy)"}},
		},
		"Unattached": {
			reason: "A policy no backend service uses protects nothing: Attached=False, saying how to attach it.",
			key:    global, typ: "CLOUD_ARMOR",
			users: gcp.PolicyUsers{"projects/p/global/securityPolicies/other": {web}},
			want: want{calls: []string{"Users p"}, count: one(0),
				cond: xpv2.Condition{Type: TypeAttached, Status: corev1.ConditionFalse, Reason: ReasonUnattached,
					Message: "No backend service uses this policy, so it protects nothing: attach it to a backend service (global) of project p, " +
						"with its securityPolicy field (gcloud compute backend-services update NAME --global --security-policy " + policyName + ")"}},
		},
		"UnattachedRegional": {
			reason: "A regional policy's message names its region.",
			key:    regional, typ: "CLOUD_ARMOR",
			users: gcp.PolicyUsers{},
			want: want{calls: []string{"Users p"}, count: one(0),
				cond: xpv2.Condition{Type: TypeAttached, Status: corev1.ConditionFalse, Reason: ReasonUnattached,
					Message: "No backend service uses this policy, so it protects nothing: attach it to a backend service (region r) of project p, " +
						"with its securityPolicy field (gcloud compute backend-services update NAME --region r --security-policy " + policyName + ")"}},
		},
		"EdgeUnused": {
			reason: "An edge policy no backend service and no backend bucket uses protects nothing: False, read from both lists.",
			key:    global, typ: "CLOUD_ARMOR_EDGE",
			users: gcp.PolicyUsers{}, buckets: gcp.PolicyUsers{},
			want: want{calls: []string{"Users p", "Buckets p"}, count: one(0),
				cond: xpv2.Condition{Type: TypeAttached, Status: corev1.ConditionFalse, Reason: ReasonUnattached,
					Message: "No backend service or backend bucket names this policy in its edgeSecurityPolicy, so it protects nothing: " +
						"attach it to a backend bucket or a global backend service of project p with a SecurityPolicyAttachment (field: edgeSecurityPolicy)"}},
		},
		"EdgeOnBucketAndService": {
			reason: "An edge policy's users are its backend buckets, then its backend services, sorted by name.",
			key:    global, typ: "CLOUD_ARMOR_EDGE",
			users:   gcp.PolicyUsers{global.String(): {edgeWeb}},
			buckets: gcp.PolicyUsers{global.String(): {static}},
			want: want{calls: []string{"Users p", "Buckets p"}, count: one(2),
				usedBy: []v1beta1.PolicyUserObservation{{Name: static.Name, Field: static.Field}, {Name: edgeWeb.Name, Field: edgeWeb.Field}},
				cond: xpv2.Condition{Type: TypeAttached, Status: corev1.ConditionTrue, Reason: ReasonAttached,
					Message: "Used by 2 of the project's backend services and buckets: projects/p/global/backendBuckets/static (edgeSecurityPolicy), projects/p/global/backendServices/web (edgeSecurityPolicy)"}},
		},
		"NetworkApplied": {
			reason: "A network policy an edge security service applies is Attached, from the edge services' list only.",
			key:    regional, typ: "CLOUD_ARMOR_NETWORK",
			edges: gcp.PolicyUsers{regional.String(): {ness}},
			want: want{calls: []string{"EdgeServices p"}, count: one(1),
				usedBy: []v1beta1.PolicyUserObservation{{Name: ness.Name, Field: ness.Field}},
				cond: xpv2.Condition{Type: TypeAttached, Status: corev1.ConditionTrue, Reason: ReasonAttached,
					Message: "Used by 1 of the project's network edge security services: projects/p/regions/r/networkEdgeSecurityServices/edge (securityPolicy)"}},
		},
		"NetworkUnused": {
			reason: "A network policy no edge security service of its region applies does nothing: said, with the fix.",
			key:    regional, typ: "CLOUD_ARMOR_NETWORK",
			edges: gcp.PolicyUsers{},
			want: want{calls: []string{"EdgeServices p"}, count: one(0),
				cond: xpv2.Condition{Type: TypeAttached, Status: corev1.ConditionFalse, Reason: ReasonNoEdgeSecurityService,
					Message: "No network edge security service in region r applies this policy: a CLOUD_ARMOR_NETWORK policy does nothing until one does. " +
						"Create a NetworkEdgeSecurityService in region r whose securityPolicyRef names this policy (it needs Cloud Armor Enterprise)"}},
		},
		"InternalService": {
			reason: "An internal service policy's users are not read: no call, no condition.",
			key:    global, typ: "CLOUD_ARMOR_INTERNAL_SERVICE",
			want: want{cond: xpv2.Condition{Type: TypeAttached, Status: corev1.ConditionUnknown}},
		},
		"CannotList": {
			reason: "Credentials that may not list backend services leave the users Unknown, without failing Observe.",
			key:    global, typ: "CLOUD_ARMOR",
			err: forbidden,
			want: want{calls: []string{"Users p"},
				cond: xpv2.Condition{Type: TypeAttached, Status: corev1.ConditionUnknown, Reason: ReasonUsersUnknown,
					Message: "Cannot list the backend services of project p to say what uses this policy: googleapi: Error 403: Required 'compute.backendServices.list' permission for 'projects/p'"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &gcptest.Projects{
				UsersFn:        func(string) (gcp.PolicyUsers, error) { return tc.users, tc.err },
				EdgeServicesFn: func(string) (gcp.PolicyUsers, error) { return tc.edges, tc.err },
				BucketsFn:      func(string) (gcp.PolicyUsers, error) { return tc.buckets, tc.err },
			}
			e := &external{projects: f, key: tc.key}
			cr := policy()
			e.reportUsers(context.Background(), cr, tc.typ)
			if diff := cmp.Diff(tc.want.calls, f.Calls); diff != "" {
				t.Errorf("\n%s\nreportUsers(...): -want calls, +got calls:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.usedBy, cr.Status.AtProvider.UsedBy); diff != "" {
				t.Errorf("\n%s\nreportUsers(...): -want usedBy, +got usedBy:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.count, cr.Status.AtProvider.UsedByCount); diff != "" {
				t.Errorf("\n%s\nreportUsers(...): -want usedByCount, +got usedByCount:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.cond, cr.GetCondition(TypeAttached), test.EquateConditions()); diff != "" {
				t.Errorf("\n%s\nreportUsers(...): -want condition, +got condition:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestReportUsersCapped(t *testing.T) {
	key := gcp.PolicyKey{Project: "p", Name: policyName}
	var users []gcp.PolicyUser
	for i := range maxUsers + 7 {
		users = append(users, gcp.PolicyUser{Name: "projects/p/global/backendServices/b" + string(rune('a'+i%26)) + string(rune('a'+i/26)), Field: "securityPolicy"})
	}
	f := &gcptest.Projects{UsersFn: func(string) (gcp.PolicyUsers, error) { return gcp.PolicyUsers{key.String(): users}, nil }}
	cr := policy()
	(&external{projects: f, key: key}).reportUsers(context.Background(), cr, "CLOUD_ARMOR")
	if got := len(cr.Status.AtProvider.UsedBy); got != maxUsers {
		t.Errorf("reportUsers(...): want %d users listed, got %d", maxUsers, got)
	}
	if got := *cr.Status.AtProvider.UsedByCount; got != maxUsers+7 {
		t.Errorf("reportUsers(...): want usedByCount %d, got %d", maxUsers+7, got)
	}
}

// TestObserveTier checks that Observe reports the Tier condition of a policy
// whose spec uses an Enterprise feature, reading the tier once, and reads
// nothing for one that does not.
func TestObserveTier(t *testing.T) {
	group := inline(1000, "allow")
	group.Match = &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: "evaluateAddressGroup('office', origin.ip)"}}
	cases := map[string]struct {
		reason string
		cr     *v1beta1.SecurityPolicy
		tiers  int
		want   corev1.ConditionStatus
	}{
		"Standard": {
			reason: "A rule using an address group in a Standard project: Tier=False, one tier read.",
			cr:     policy(withRules(group)),
			tiers:  1,
			want:   corev1.ConditionFalse,
		},
		"NoFeature": {
			reason: "A spec without Enterprise features reads no tier and has no Tier condition.",
			cr:     policy(withRules(inline(1000, "allow", "10.0.0.0/8"))),
			want:   corev1.ConditionUnknown,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &fakePolicies{GetFn: returns(gcpPolicy(), nil)}
			e := newExternal(tc.cr, f, noClaims, nil)
			p := unused()
			e.projects = p
			if _, err := e.Observe(context.Background(), tc.cr); err != nil {
				t.Fatal(err)
			}
			n := 0
			for _, c := range p.Calls {
				if c == "Tier p" {
					n++
				}
			}
			if n != tc.tiers {
				t.Errorf("\n%s\nObserve(...): want %d tier reads, got %d (%v)", tc.reason, tc.tiers, n, p.Calls)
			}
			if got := tc.cr.GetCondition(apivalues.TypeTier).Status; got != tc.want {
				t.Errorf("\n%s\nObserve(...): want Tier %s, got %s", tc.reason, tc.want, got)
			}
		})
	}
}
