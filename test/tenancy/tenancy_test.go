package tenancy

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/ownership"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/chaos/harness"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
)

// Projects and the bearer tokens the emulator grants them to.
const (
	projA = "proj-a"
	projB = "proj-b"

	tokenA       = "token-a"      // tenant-a's ProviderConfig: proj-a only
	tokenB       = "token-b"      // tenant-b's ProviderConfig: proj-b only
	tokenShared  = "token-shared" // the platform's ClusterProviderConfigs: both
	tokenAuditor = "auditor"      // this test, behind the provider's back: every project
)

// ClusterProviderConfigs. shared talks to the emulator directly; watched and
// tenantAOnly talk to it through the counting proxy.
const (
	cpcShared      = "shared"
	cpcWatched     = "shared-watched"
	cpcTenantAOnly = "tenant-a-only"
)

const (
	// poll is the provider's --poll; window is three of them, the time
	// over which "nothing happens" is asserted.
	poll   = 5 * time.Second
	window = 3 * poll

	// settle bounds how long the provider takes to reach a state we wait
	// for, on a loaded 2-core machine.
	settle = 90 * time.Second
)

// ambientRefused is how the ProviderConfig CRD refuses ambient credentials.
const ambientRefused = "a namespaced ProviderConfig may only use credentials.source Secret or AccessToken"

type suite struct {
	plat  *platform.Platform
	Admin client.Client // the node's API server, as its admin
	Emu   *emulator.Running
	gcp   *compute.Service // the emulator as tokenAuditor
	proxy *countingProxy   // in front of the emulator, for cpcWatched and cpcTenantAOnly
	// emuEndpoint and proxyEndpoint are the emulator and the proxy as the
	// provider's pod reaches them.
	emuEndpoint, proxyEndpoint string
}

// Gone is nil once o is not found. Update reads o, applies mutate and
// writes it, retrying on conflicts. Both as test/chaos's harness does them,
// with the node's admin.
func (s *suite) Gone(o client.Object) error { return s.objects().Gone(o) }

func (s *suite) Update(ctx context.Context, o client.Object, mutate func()) error {
	return s.objects().Update(ctx, o, mutate)
}

func (s *suite) objects() *harness.Env { return &harness.Env{Admin: s.Admin, Emu: s.Emu} }

// Eventually polls cond every 250 ms until it returns nil, failing after
// timeout or at once when the provider's container restarted.
func (s *suite) Eventually(t *testing.T, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	wait.Eventually(t, timeout, what, cond, wait.Every(250*time.Millisecond), wait.AbortOn(s.plat.Err))
}

// TestTenancy runs one control plane, one emulator with per-token project
// grants and one provider process for every scenario. The scenarios use
// disjoint GCP policy names and run in parallel. See the package comment.
func TestTenancy(t *testing.T) {
	if testing.Short() {
		t.Skip("tenancy: skipped with -short")
	}
	ctx := context.Background()
	// The provider is the one Crossplane installed on the shared node, with
	// the permissions its RBAC manager and provider-runtime.yaml give it;
	// hack/shared-node.sh starts it with --poll=5s, --poll-jitter=500ms and
	// --snapshot-ttl=4s: a snapshot lives for most of a poll, so a tenant's
	// snapshot is fresh while another tenant's object reads the same policy.
	plat := platform.Attach(t, kube.SchemeT(t))
	emu := emulator.Start(t, emulator.Options{OpLatency: 20 * time.Millisecond, Seed: 11, Grants: map[string]emulator.Grant{
		tokenA:       {Read: []string{projA}, Write: []string{projA}},
		tokenB:       {Read: []string{projB}, Write: []string{projB}},
		tokenShared:  {Write: []string{projA, projB}},
		tokenAuditor: {Write: []string{emulator.AnyProject}},
	}})
	s := &suite{plat: plat, Admin: plat.Kube.Client, Emu: emu, proxy: newCountingProxy(t, emu.URL())}
	expose := func(url string) string {
		addr, err := plat.Node.Expose(strings.TrimPrefix(url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		return "http://" + addr + "/compute/v1/"
	}
	s.emuEndpoint, s.proxyEndpoint = expose(emu.URL()), expose(s.proxy.srv.URL)
	// The platform team's grant: namespaced ProviderConfigs may name this
	// suite's emulator and proxy (a tenant's own endpoint is refused:
	// CredentialsStayOurs). Registered before the namespaces' cleanup, so
	// it is put back after their objects are gone.
	plat.ReconfigureProvider(t, func(spec map[string]any) {
		args := platform.ArgsIn(spec)
		for _, ep := range []string{s.emuEndpoint, s.proxyEndpoint} {
			args = append(args, "--namespaced-endpoint="+ep)
		}
		platform.SetArgsIn(spec, args)
	})
	// Registered after the emulator's cleanup, so it runs first: the
	// provider's deletes still reach GCP. Deleting a tenant's namespace must
	// finish on its own: its objects delete what they manage through the
	// namespace's own ProviderConfig, which stays until they are gone (before
	// it did, the namespace stayed Terminating and its GCP policies leaked).
	t.Cleanup(func() {
		if forced := plat.DeleteNamespaces(t, "tenant-a", "tenant-b", "tenant-c", "platform"); len(forced) > 0 {
			t.Errorf("deleting the tenants' namespaces left objects the provider could not delete: %v", forced)
		}
	})
	var err error
	if s.gcp, err = emu.NewServiceWithToken(ctx, tokenAuditor); err != nil {
		t.Fatal(err)
	}

	for ns, labels := range map[string]map[string]string{
		"tenant-a": {"tenant": "a"},
		"tenant-b": {"tenant": "b"},
		"tenant-c": nil, // admitted by cpcTenantAOnly only once NamespaceSelector labels it
		"platform": nil, // the platform team's Secrets
	} {
		if err := s.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, Labels: labels}}); err != nil {
			t.Fatal(err)
		}
	}
	// Each tenant: a token of its own in its own namespace, and a
	// namespaced ProviderConfig "default" for its own project.
	for _, tn := range []struct{ ns, token, project string }{{"tenant-a", tokenA, projA}, {"tenant-b", tokenB, projB}} {
		s.create(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: gcp-token, namespace: %s}
stringData: {token: %s}`, tn.ns, tn.token))
		s.create(t, fmt.Sprintf(`apiVersion: armorplane.io/v1beta1
kind: ProviderConfig
metadata: {name: default, namespace: %s}
spec:
  projectID: %s
  endpoint: %s
  credentials: {source: AccessToken, secretRef: {name: gcp-token, key: token}}`, tn.ns, tn.project, s.emuEndpoint))
	}
	// The platform's ClusterProviderConfigs, all with a token that may
	// write both projects: only the cluster's own rules stop their users.
	// Each grants the tenants' namespaces the backend services att-* and no
	// other.
	s.create(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: shared-token, namespace: platform}
stringData: {token: %s}`, tokenShared))
	for _, c := range []struct{ name, endpoint, selector string }{
		{cpcShared, s.emuEndpoint, ""},
		{cpcWatched, s.proxyEndpoint, ""},
		{cpcTenantAOnly, s.proxyEndpoint, "\n  namespaceSelector: {matchLabels: {tenant: a}}"},
	} {
		s.create(t, fmt.Sprintf(`apiVersion: armorplane.io/v1beta1
kind: ClusterProviderConfig
metadata: {name: %s}
spec:
  projectID: %s
  endpoint: %s
  credentials: {source: AccessToken, secretRef: {namespace: platform, name: shared-token, key: token}}
  attachmentGrants:
  - namespaceSelector: {matchExpressions: [{key: tenant, operator: Exists}]}
    targets: [{kind: BackendService, names: ["att-*"]}]%s`, c.name, projA, c.endpoint, c.selector))
	}

	for name, fn := range map[string]func(*testing.T){
		"ReadsDoNotLeak":                      s.testReadsDoNotLeak,
		"ClaimsAreNamespaceScoped":            s.testClaimsAreNamespaceScoped,
		"OnePolicyOwner":                      s.testOnePolicyOwner,
		"OneRuleOwner":                        s.testOneRuleOwner,
		"OwnerLabel":                          s.testOwnerLabel,
		"AmbientCredentialsAdmission":         s.testAmbientCredentialsAdmission,
		"NamespaceSelector":                   s.testNamespaceSelector,
		"EdgeServiceStaysInItsNamespace":      s.testEdgeServiceStaysInItsNamespace,
		"OrganizationKindsNeedClusterConfig":  s.testOrganizationKindsNeedClusterConfig,
		"AttachmentNamespaceSelector":         s.testAttachmentNamespaceSelector,
		"AttachmentOneOwner":                  s.testAttachmentOneOwner,
		"AttachmentPolicyRefStaysInNamespace": s.testAttachmentPolicyRefStaysInNamespace,
		"AttachmentUngrantedBackend":          s.testAttachmentUngrantedBackend,
		"AttachmentAdoptThenDelete":           s.testAttachmentAdoptThenDelete,
		"RemoteSecretStaysInNamespace":        s.testRemoteClusterSecretStaysInNamespace,
		"RemoteIdentityStaysInNamespace":      s.testRemoteClusterIdentityStaysInNamespace,
		"RemoteCredentialsNeverShown":         s.testRemoteClusterCredentialsNeverShown,
		"RemoteReach":                         s.testRemoteClusterReach,
		"RemoteEndlessList":                   s.testRemoteClusterEndlessList,
		"InstancesStayInNamespace":            s.testInstancesStayInNamespace,
		"NATStaysInNamespace":                 s.testNATStaysInNamespace,
		"NamespaceSourcesStayInNamespace":     s.testNamespaceSourcesStayInNamespace,
		"CredentialsStayOurs":                 s.testCredentialsStayOurs,
		"EndpointNotGranted":                  s.testEndpointNotGranted,
		"ProjectNotGranted":                   s.testProjectNotGranted,
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			fn(t)
			t.Logf("%s took %s", name, time.Since(start).Round(100*time.Millisecond))
		})
	}
}

// testReadsDoNotLeak: tenant-b's Observe-only object names tenant-a's policy
// in proj-a, which token-b may not read. While tenant-a's object reads that
// policy through the same provider process (and the same kind of cached
// snapshot), tenant-b's must get GCP's 403 and no data at all.
func (s *suite) testReadsDoNotLeak(t *testing.T) {
	a := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: api-edge, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider:
    description: tenant-a's edge policy
    defaultRule: {action: "deny(403)"}
    rules:
    - {priority: 1000, action: allow, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["10.10.0.0/16"]}}}`)
	s.Eventually(t, settle, "tenant-a/api-edge Ready", s.ready(a))
	// There is something to leak: tenant-a's object holds the policy's data.
	s.Eventually(t, settle, "tenant-a/api-edge to observe its rules", func() error {
		sp := &v1beta1.SecurityPolicy{}
		if err := s.Admin.Get(context.Background(), client.ObjectKeyFromObject(a), sp); err != nil {
			return err
		}
		if o := sp.Status.AtProvider; o.ID == "" || o.SelfLink == "" || o.RuleCount != 2 || len(o.Rules) != 2 {
			return fmt.Errorf("tenant-a/api-edge atProvider: id %q selfLink %q ruleCount %d rules %d", o.ID, o.SelfLink, o.RuleCount, len(o.Rules))
		}
		return nil
	})

	forbidden := s.Emu.Stats().Forbidden
	b := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata:
  name: api-edge-peek
  namespace: tenant-b
  annotations: {crossplane.io/external-name: api-edge}
spec:
  managementPolicies: [Observe]
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider: {project: proj-a}`)
	denied := "Required 'compute.securityPolicies.get' permission for 'projects/proj-a/global/securityPolicies/api-edge'"
	s.Eventually(t, settle, "tenant-b's Observe-only object to get GCP's 403", s.syncedFalse(b, denied))
	s.holds(t, window, "tenant-b denied with no data while tenant-a reads the policy",
		all(s.syncedFalse(b, denied), s.atProviderEmpty(b), s.ready(a)))
	// The 403s were GCP's answers to token-b, not something the provider
	// made up without asking.
	if n := s.Emu.Stats().Forbidden - forbidden; n == 0 {
		t.Error("the emulator refused no call while tenant-b's object was denied: its reads never reached GCP with token-b")
	}
}

// atProviderEmpty is a condition: o's status.atProvider holds nothing.
func (s *suite) atProviderEmpty(o client.Object) func() error {
	return func() error {
		sp := &v1beta1.SecurityPolicy{}
		if err := s.Admin.Get(context.Background(), client.ObjectKeyFromObject(o), sp); err != nil {
			return err
		}
		if !reflect.ValueOf(sp.Status.AtProvider).IsZero() {
			return fmt.Errorf("%s has status.atProvider %+v: data of a policy its credentials may not read", client.ObjectKeyFromObject(o), sp.Status.AtProvider)
		}
		return nil
	}
}

// testClaimsAreNamespaceScoped: a rule object in tenant-b claims priority
// 100 of tenant-a's policy through a ClusterProviderConfig whose token may
// write proj-a: only the cluster's ownership (spec.allowedRules) stops it.
// Opened with from: All, the same claim wins the priority.
func (s *suite) testClaimsAreNamespaceScoped(t *testing.T) {
	ctx := context.Background()
	shop := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: shop, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider:
    description: tenant-a's shop
    defaultRule: {action: "deny(403)"}
    rules:
    - {priority: 100, action: allow, description: tenant-a inline, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["10.20.0.0/16"]}}}`)
	inline := s.ruleIs(projA, "shop", 100, "allow", "tenant-a inline", "10.20.0.0/16")
	s.Eventually(t, settle, "tenant-a/shop Ready with its inline rule", all(s.ready(shop), inline))

	base := s.mutations(projA, "shop")
	claim := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata: {name: shop-claim, namespace: tenant-b}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: shared-watched}
  forProvider:
    securityPolicy: shop
    project: proj-a
    priority: 100
    action: "deny(404)"
    description: tenant-b claim
    match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["192.0.2.0/24"]}}`)
	refused := all(
		s.syncedFalse(claim, `GCP policy projects/proj-a/global/securityPolicies/shop is managed by SecurityPolicy tenant-a/shop, which does not admit SecurityPolicyRules from namespace "tenant-b"`),
		s.conditionIs(shop, typeRuleConflict, corev1.ConditionTrue, "ClaimRefused", "SecurityPolicyRule tenant-b/shop-claim may not claim priority 100"),
	)
	s.Eventually(t, settle, "the claim refused and reported on both objects", refused)
	s.holds(t, window, "tenant-a's rule untouched, no call from the refused claim",
		all(refused, s.ready(shop), inline, s.noCalls(projA, "shop"), s.noMutations(projA, "shop", base)))

	sp := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "tenant-a", Name: "shop"}}
	if err := s.Update(ctx, sp, func() {
		sp.Spec.AllowedRules = &v1beta1.AllowedRules{Namespaces: &v1beta1.RuleNamespaces{From: v1beta1.NamespacesFromAll}}
	}); err != nil {
		t.Fatal(err)
	}
	claimed := all(
		s.ready(claim),
		s.ruleIs(projA, "shop", 100, "deny(404)", "tenant-b claim", "192.0.2.0/24"),
		s.conditionIs(shop, typeRuleConflict, corev1.ConditionTrue, "PriorityClaimed", "inline rule at priority 100 is ignored: SecurityPolicyRule tenant-b/shop-claim claims it"),
		s.ready(shop),
	)
	s.Eventually(t, settle, "tenant-b's claim admitted once shop allows rules from all namespaces", claimed)
	if len(s.proxy.Calls(projA, "shop")) == 0 {
		t.Fatal("the counting proxy saw no call from the admitted claim: the no-call assertions above prove nothing")
	}
	base = s.mutations(projA, "shop")
	s.holds(t, window, "the claim keeps the priority, the policy does not fight it",
		all(claimed, s.noMutations(projA, "shop", base)))

	// Deleted, the claim hands the priority back to the inline rule.
	s.delete(t, claim)
	s.Eventually(t, settle, "the claim gone and tenant-a's inline rule back at 100",
		all(s.gone(claim), inline, s.conditionIs(shop, typeRuleConflict, corev1.ConditionFalse, "NoConflict"), s.ready(shop)))
}

// testOnePolicyOwner: two SecurityPolicies in two namespaces for one GCP
// policy, both allowed to write: the older owns it; the newer makes no GCP
// call (its config's calls all pass the counting proxy) and its deletion
// leaves the policy alone.
func (s *suite) testOnePolicyOwner(t *testing.T) {
	a := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: dup, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: shared}
  forProvider: {description: owned by tenant-a}`)
	s.Eventually(t, settle, "tenant-a/dup Ready", s.ready(a))
	time.Sleep(1100 * time.Millisecond) // creationTimestamps have a resolution of one second

	base := s.mutations(projA, "dup")
	b := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: dup, namespace: tenant-b}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: shared-watched}
  forProvider: {description: tenant-b wants this}`)
	refused := s.syncedFalse(b, "GCP policy projects/proj-a/global/securityPolicies/dup is managed by SecurityPolicy tenant-a/dup, the oldest object for it")
	s.Eventually(t, settle, "tenant-b/dup refused", refused)
	untouched := all(s.ready(a), s.descriptionIs(projA, "dup", "owned by tenant-a"), s.noCalls(projA, "dup"), s.noMutations(projA, "dup", base))
	s.holds(t, window, "tenant-b/dup refused, making no GCP call", all(refused, untouched))

	start := time.Now()
	s.delete(t, b)
	s.Eventually(t, 30*time.Second, "tenant-b/dup deleted", s.gone(b))
	t.Logf("tenant-b/dup was gone %s after its deletion", time.Since(start).Round(100*time.Millisecond))
	s.holds(t, poll, "the GCP policy left to tenant-a/dup", untouched)
}

// descriptionIs is a condition: GCP's policy project/name exists and has
// description.
func (s *suite) descriptionIs(project, name, description string) func() error {
	return func() error {
		sp, err := s.gcpPolicy(project, name)
		if err != nil {
			return err
		}
		if sp.Description != description {
			return fmt.Errorf("GCP policy %s has description %q, want %q", name, sp.Description, description)
		}
		return nil
	}
}

// testOneRuleOwner: two SecurityPolicyRules for one priority of one policy,
// both in the policy's namespace: the older owns the GCP rule; the newer
// makes no GCP call and its deletion leaves the rule in place.
func (s *suite) testOneRuleOwner(t *testing.T) {
	p := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: split, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider: {description: rules owned by rule objects, defaultRule: {action: "deny(403)"}}`)
	s.Eventually(t, settle, "tenant-a/split Ready", s.ready(p))
	older := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata: {name: split-old, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider:
    securityPolicy: split
    priority: 200
    action: allow
    description: older claim
    match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["198.51.100.0/24"]}}`)
	olderRule := s.ruleIs(projA, "split", 200, "allow", "older claim", "198.51.100.0/24")
	s.Eventually(t, settle, "tenant-a/split-old Ready and in GCP", all(s.ready(older), olderRule))
	time.Sleep(1100 * time.Millisecond) // creationTimestamps have a resolution of one second

	base := s.mutations(projA, "split")
	newer := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicyRule
metadata: {name: split-new, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: shared-watched}
  forProvider:
    securityPolicy: split
    project: proj-a
    priority: 200
    action: "deny(403)"
    description: newer claim
    match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["203.0.113.0/24"]}}`)
	refused := s.syncedFalse(newer, "the rule at priority 200 of GCP policy projects/proj-a/global/securityPolicies/split is managed by SecurityPolicyRule tenant-a/split-old, the oldest object for it")
	s.Eventually(t, settle, "tenant-a/split-new refused", refused)
	untouched := all(s.ready(older), olderRule, s.noCalls(projA, "split"), s.noMutations(projA, "split", base))
	s.holds(t, window, "tenant-a/split-new refused, making no GCP call", all(refused, untouched))

	start := time.Now()
	s.delete(t, newer)
	s.Eventually(t, 30*time.Second, "tenant-a/split-new deleted", s.gone(newer))
	t.Logf("tenant-a/split-new was gone %s after its deletion", time.Since(start).Round(100*time.Millisecond))
	s.holds(t, poll, "the GCP rule left to tenant-a/split-old", untouched)
}

// testOwnerLabel: the provider labels the policies it creates with their
// owner; a policy labelled for another owner is refused and left alone; an
// unlabelled one is adopted and labelled.
func (s *suite) testOwnerLabel(t *testing.T) {
	ctx := context.Background()
	ks := &corev1.Namespace{}
	if err := s.Admin.Get(ctx, client.ObjectKey{Name: "kube-system"}, ks); err != nil {
		t.Fatal(err)
	}
	labeler := ownership.NewLabeler(string(ks.GetUID()))
	hex32 := regexp.MustCompile(`^[0-9a-f]{32}$`)
	ownerIs := func(project, name string, o client.Object) func() error {
		return func() error {
			sp, err := s.gcpPolicy(project, name)
			if err != nil {
				return err
			}
			v, want := sp.Labels["armorplane-owner"], labeler.Value(o)
			if !hex32.MatchString(v) || v != want {
				return fmt.Errorf("GCP policy %s has labels %v, want armorplane-owner=%s (32 hex characters)", name, sp.Labels, want)
			}
			return nil
		}
	}

	t.Run("Created", func(t *testing.T) {
		o := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: labelled, namespace: tenant-b}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider: {description: created by tenant-b, labels: {team: b}}`)
		s.Eventually(t, settle, "tenant-b/labelled Ready, labelled with its owner", all(s.ready(o), ownerIs(projB, "labelled", o),
			func() error {
				sp, err := s.gcpPolicy(projB, "labelled")
				if err != nil {
					return err
				}
				want := providedLabels(t, labeler, o)
				want["team"] = "b"
				if !maps.Equal(sp.Labels, want) {
					return fmt.Errorf("GCP policy labelled has labels %v, want team=b, the owner label and the provenance labels %v", sp.Labels, want)
				}
				return nil
			}))
	})

	t.Run("LabelledForAnotherOwner", func(t *testing.T) {
		const other = "00000000000000000000000000000000"
		s.insert(t, projA, &compute.SecurityPolicy{Name: "foreign", Description: "owned elsewhere",
			Labels: map[string]string{"armorplane-owner": other, "team": "elsewhere"}})
		before, err := s.gcpPolicy(projA, "foreign")
		if err != nil {
			t.Fatal(err)
		}
		base := s.mutations(projA, "foreign")
		o := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata:
  name: foreign-claim
  namespace: tenant-a
  annotations: {crossplane.io/external-name: foreign}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider: {description: mine now, labels: {team: a}, defaultRule: {action: "deny(403)"}}`)
		refused := s.syncedFalse(o, "GCP policy projects/proj-a/global/securityPolicies/foreign carries the label armorplane-owner="+other,
			"another SecurityPolicy, in this cluster or another, owns it")
		s.Eventually(t, settle, "tenant-a/foreign-claim refused", refused)
		unchanged := all(s.noMutations(projA, "foreign", base), s.unchanged(projA, before))
		s.holds(t, window, "the labelled policy untouched", all(refused, unchanged))
		s.delete(t, o)
		s.Eventually(t, 30*time.Second, "tenant-a/foreign-claim deleted", s.gone(o))
		s.holds(t, poll, "the labelled policy left in place", unchanged)
	})

	t.Run("CrashRecovery", func(t *testing.T) {
		// The provider inserted the policy, with its label, and died before
		// recording the create: the object, applied again with a pending
		// create and no record of success, must take its policy back
		// without a second insert, without an adoption and without a write.
		o := decode(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata:
  name: recovered
  namespace: tenant-a
  annotations: {crossplane.io/external-create-pending: "2026-01-01T00:00:00Z"}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider: {description: inserted before the crash}`)
		s.insert(t, projA, &compute.SecurityPolicy{Name: "recovered", Description: "inserted before the crash",
			Labels: providedLabels(t, labeler, o)})
		before, err := s.gcpPolicy(projA, "recovered")
		if err != nil {
			t.Fatal(err)
		}
		base := s.mutations(projA, "recovered")
		if err := s.Admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.Admin.Delete(context.Background(), o) })
		s.Eventually(t, settle, "tenant-a/recovered Ready on the policy it inserted", s.ready(o))
		s.holds(t, poll, "no write to the recovered policy", all(s.noMutations(projA, "recovered", base), s.unchanged(projA, before)))
		events := &corev1.EventList{}
		if err := s.Admin.List(ctx, events, client.InNamespace("tenant-a")); err != nil {
			t.Fatal(err)
		}
		for _, ev := range events.Items {
			if ev.InvolvedObject.Name == "recovered" && ev.Reason == "AdoptedExternalPolicy" {
				t.Errorf("a policy carrying our own label was adopted as if it were someone else's: %s", ev.Message)
			}
		}
	})

	t.Run("UnlabelledAdopted", func(t *testing.T) {
		s.insert(t, projA, &compute.SecurityPolicy{Name: "stray", Description: "pre-existing, unlabelled"})
		o := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: stray, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider: {description: adopted by tenant-a}`)
		s.Eventually(t, settle, "tenant-a/stray adopted, written and labelled",
			all(s.ready(o), s.descriptionIs(projA, "stray", "adopted by tenant-a"), ownerIs(projA, "stray", o)))
		s.Eventually(t, 30*time.Second, "the AdoptedExternalPolicy Event", func() error {
			events := &corev1.EventList{}
			if err := s.Admin.List(ctx, events, client.InNamespace("tenant-a")); err != nil {
				return err
			}
			var seen []string
			for _, ev := range events.Items {
				if ev.InvolvedObject.Kind == v1beta1.SecurityPolicyKind && ev.InvolvedObject.Name == "stray" {
					if ev.Reason == "AdoptedExternalPolicy" && ev.Type == corev1.EventTypeNormal &&
						strings.Contains(ev.Message, "armorplane-owner="+labeler.Value(o)) {
						return nil
					}
					seen = append(seen, ev.Reason+": "+ev.Message)
				}
			}
			return fmt.Errorf("no AdoptedExternalPolicy Event naming the owner label for tenant-a/stray; its Events: %v", seen)
		})
	})
}

// insert creates a policy in GCP behind the provider's back and waits until
// the insert's operation is done, so the provider finds a policy it may
// write at once.
func (s *suite) insert(t *testing.T, project string, sp *compute.SecurityPolicy) {
	t.Helper()
	op, err := s.gcp.SecurityPolicies.Insert(project, sp).Do()
	if err != nil {
		t.Fatalf("insert %s: %v", sp.Name, err)
	}
	s.Eventually(t, 30*time.Second, "GCP to insert "+sp.Name, func() error {
		o, err := s.gcp.GlobalOperations.Get(project, op.Name).Do()
		switch {
		case err != nil:
			return err
		case o.Status != "DONE":
			return fmt.Errorf("operation %s is %s", o.Name, o.Status)
		case o.Error != nil:
			t.Fatalf("insert %s failed: %+v", sp.Name, o.Error.Errors)
		}
		_, err = s.gcpPolicy(project, sp.Name)
		return err
	})
}

// unchanged is a condition: GCP's policy is as before: same fingerprints,
// description and labels.
func (s *suite) unchanged(project string, before *compute.SecurityPolicy) func() error {
	return func() error {
		sp, err := s.gcpPolicy(project, before.Name)
		if err != nil {
			return err
		}
		if sp.Fingerprint != before.Fingerprint || sp.LabelFingerprint != before.LabelFingerprint ||
			sp.Description != before.Description || !reflect.DeepEqual(sp.Labels, before.Labels) {
			return fmt.Errorf("GCP policy %s changed: fingerprint %s, labelFingerprint %s, description %q, labels %v; was %s, %s, %q, %v",
				sp.Name, sp.Fingerprint, sp.LabelFingerprint, sp.Description, sp.Labels,
				before.Fingerprint, before.LabelFingerprint, before.Description, before.Labels)
		}
		return nil
	}
}

// testAmbientCredentialsAdmission: the ProviderConfig CRD refuses every
// source that would act with the provider's own GCP identity; a
// ClusterProviderConfig, which only the platform team can create, keeps
// them. The provider side of --namespaced-ambient-credentials (the provider
// using such a config when allowed) cannot be shown here, since admission
// refuses the config first; it is unit-tested in internal/controller/connector.
func (s *suite) testAmbientCredentialsAdmission(t *testing.T) {
	ctx := context.Background()
	const pc = `apiVersion: armorplane.io/v1beta1
kind: ProviderConfig
metadata: {name: %s, namespace: tenant-a}
spec:
  projectID: proj-a
  credentials: %s`
	namespaced := map[string]struct {
		creds   string
		wantErr string
	}{
		"InjectedIdentity":          {`{source: InjectedIdentity}`, ambientRefused},
		"Environment":               {`{source: Environment, env: {name: GOOGLE_CREDENTIALS}}`, ambientRefused},
		"Filesystem":                {`{source: Filesystem, fs: {path: /var/run/secrets/key.json}}`, ambientRefused},
		"ImpersonateServiceAccount": {`{source: ImpersonateServiceAccount, impersonateServiceAccount: {name: armor@proj-a.iam.gserviceaccount.com}}`, ambientRefused},
		"Secret":                    {`{source: Secret, secretRef: {name: gcp-token, key: token}}`, ""},
		"AccessToken":               {`{source: AccessToken, secretRef: {name: gcp-token, key: token}}`, ""},
	}
	for name, tc := range namespaced {
		t.Run("ProviderConfig"+name, func(t *testing.T) {
			u := decode(t, fmt.Sprintf(pc, "pc-"+strings.ToLower(name), tc.creds))
			err := s.Admin.Create(ctx, u, client.FieldValidation("Strict"))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("a namespaced ProviderConfig with %s was refused: %v", name, err)
				}
				return
			}
			if err == nil || !kerrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("a namespaced ProviderConfig with %s: got error %v, want Invalid containing %q", name, err, tc.wantErr)
			}
			if err := s.Admin.Get(ctx, client.ObjectKeyFromObject(u), u.DeepCopy()); !kerrors.IsNotFound(err) {
				t.Fatalf("the refused ProviderConfig exists: %v", err)
			}
		})
	}
	for name, creds := range map[string]string{
		"InjectedIdentity":          `{source: InjectedIdentity}`,
		"ImpersonateServiceAccount": `{source: ImpersonateServiceAccount, impersonateServiceAccount: {name: armor@proj-a.iam.gserviceaccount.com}}`,
	} {
		t.Run("ClusterProviderConfig"+name, func(t *testing.T) {
			u := decode(t, fmt.Sprintf(`apiVersion: armorplane.io/v1beta1
kind: ClusterProviderConfig
metadata: {name: %s}
spec:
  projectID: proj-a
  namespaceSelector: {matchLabels: {tenant: a}}
  credentials: %s`, "ambient-"+strings.ToLower(name), creds))
			if err := s.Admin.Create(ctx, u, client.FieldValidation("Strict")); err != nil {
				t.Fatalf("a ClusterProviderConfig with %s was refused: %v", name, err)
			}
			got := u.DeepCopy()
			if err := s.Admin.Get(ctx, client.ObjectKeyFromObject(u), got); err != nil {
				t.Fatal(err)
			}
			if src, _, _ := unstructured.NestedString(got.Object, "spec", "credentials", "source"); src != name {
				t.Fatalf("ClusterProviderConfig stored with credentials.source %q, want %q", src, name)
			}
		})
	}
}

// testOrganizationKindsNeedClusterConfig: an organization or folder policy,
// its rules and its association affect every project below them, so a tenant may not
// point one at its own namespaced ProviderConfig (its credentials would act
// on the whole organization): the CRDs the package installed refuse it at
// admission, with a message saying why; with no providerConfigRef the object
// defaults to the platform's ClusterProviderConfig "default".
func (s *suite) testOrganizationKindsNeedClusterConfig(t *testing.T) {
	ctx := context.Background()
	const wantMsg = "may only use a ClusterProviderConfig"
	for kind, forProvider := range map[string]string{
		"OrganizationSecurityPolicy":            `{parent: organizations/123456789012, description: a tenant's baseline}`,
		"OrganizationSecurityPolicyAssociation": `{securityPolicy: "1234", attachmentId: organizations/123456789012}`,
		"OrganizationSecurityPolicyRule":        `{securityPolicy: "1234", priority: 100, action: allow, match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["192.0.2.0/24"]}}}`,
	} {
		t.Run(kind, func(t *testing.T) {
			u := decode(t, fmt.Sprintf(`apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: %s
metadata: {name: tenant-org, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider: %s`, kind, forProvider))
			err := s.Admin.Create(ctx, u, client.FieldValidation("Strict"), client.DryRunAll)
			if err == nil || !kerrors.IsInvalid(err) || !strings.Contains(err.Error(), wantMsg) {
				t.Fatalf("%s naming tenant-a's ProviderConfig: got error %v, want Invalid containing %q", kind, err, wantMsg)
			}
			// The positive control: the same object with no reference is
			// admitted, defaulted to the ClusterProviderConfig.
			unstructured.RemoveNestedField(u.Object, "spec", "providerConfigRef")
			if err := s.Admin.Create(ctx, u, client.FieldValidation("Strict"), client.DryRunAll); err != nil {
				t.Fatalf("%s with no providerConfigRef was refused: %v", kind, err)
			}
			if k, _, _ := unstructured.NestedString(u.Object, "spec", "providerConfigRef", "kind"); k != "ClusterProviderConfig" {
				t.Fatalf("%s with no providerConfigRef defaulted to kind %q, want ClusterProviderConfig", kind, k)
			}
		})
	}
}

// testNamespaceSelector: a ClusterProviderConfig with a namespaceSelector
// serves nothing in a namespace it does not admit (and makes no GCP call
// for it: its endpoint is the counting proxy), then serves the same object
// once the namespace is labelled.
func (s *suite) testNamespaceSelector(t *testing.T) {
	ctx := context.Background()
	o := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: gated, namespace: tenant-c}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: tenant-a-only}
  forProvider: {description: gated by namespace labels}`)
	refused := s.syncedFalse(o, `ClusterProviderConfig "tenant-a-only" does not admit namespace "tenant-c"`)
	s.Eventually(t, settle, "tenant-c/gated refused", refused)
	notInGCP := func() error {
		if _, ok := s.Emu.Snapshot()[policyPath(projA, "gated")]; ok {
			return fmt.Errorf("GCP holds policy gated, created for a namespace its config does not admit")
		}
		return nil
	}
	s.holds(t, window, "tenant-c/gated refused, making no GCP call", all(refused, notInGCP, s.noCalls(projA, "gated")))

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "tenant-c"}}
	if err := s.Update(ctx, ns, func() { ns.Labels = map[string]string{"tenant": "a"} }); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	// Within two polls, not the minute of error backoff its refusals built
	// up: the label change re-reconciles the namespace's resources with
	// their backoff forgotten (25.8 s before that, 0.3 s after, measured).
	s.Eventually(t, 2*poll, "tenant-c/gated Ready soon after tenant-c is labelled tenant=a",
		all(s.ready(o), s.descriptionIs(projA, "gated", "gated by namespace labels")))
	t.Logf("tenant-c/gated was Ready %s after its namespace was labelled", time.Since(start).Round(100*time.Millisecond))
	if len(s.proxy.Calls(projA, "gated")) == 0 {
		t.Fatal("the counting proxy saw no call from the admitted object: the no-call assertion above proves nothing")
	}
}

// providedLabels are the labels the provider puts on o's GCP policy: the
// owner label and the provenance labels.
func providedLabels(t *testing.T, l ownership.Labeler, o client.Object) map[string]string {
	t.Helper()
	u, ok := o.(*unstructured.Unstructured)
	if !ok {
		t.Fatalf("providedLabels needs an unstructured object, got %T", o)
	}
	sp := &v1beta1.SecurityPolicy{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, sp); err != nil {
		t.Fatal(err)
	}
	return l.ExternalLabels(sp, v1beta1.SecurityPolicyGroupVersionKind.GroupKind())
}

func decode(t *testing.T, manifest string) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatalf("bad test object: %v\n%s", err, manifest)
	}
	return u
}
