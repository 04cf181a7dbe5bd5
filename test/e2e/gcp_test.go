package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// examplesNotApplied are folders under examples/ that readObjects leaves
// out, with the reason. Everything else under examples/ is applied against
// the emulator by TestE2E and must become Ready.
var examplesNotApplied = map[string]string{
	repo.Path("examples", "allowlist"): "the IPAllowlist's: test/platform applies them on the same node, with the Nodes, " +
		"Services and ConfigMaps they read; rbac.yaml is the install's own RBAC, which this suite must not take over",
	repo.Path("examples", "real-gcp"): "credentials for real GCP (GKE Workload Identity, a service-account key Secret) " +
		"that cannot reach the emulator; validated by test/validate, and TestGCP configures real credentials itself",
}

// Environment variables that point TestGCP at a real project.
const (
	envGCPProject     = "E2E_GCP_PROJECT"
	envGCPCredentials = "E2E_GCP_CREDENTIALS" // path to a service-account (or other) credentials JSON file
	envGCPToken       = "E2E_GCP_ACCESS_TOKEN"
	envGCPEnterprise  = "E2E_GCP_ENTERPRISE" // "true": the project has Cloud Armor Enterprise
	envGCPEndpoint    = "E2E_GCP_ENDPOINT"   // optional: another Compute endpoint, e.g. the emulator, to try this test itself
	envADC            = "GOOGLE_APPLICATION_CREDENTIALS"
)

// enterpriseExamples need Cloud Armor Enterprise in a real project; TestGCP
// applies them only with E2E_GCP_ENTERPRISE=true.
var enterpriseExamples = []string{"network-udf.yaml", "address-group.yaml", "network-edge-security-service.yaml"}

// organizationExamples name an organization TestGCP's project credentials
// do not administer; TestGCP never applies them.
var organizationExamples = []string{"organization-policy.yaml", "organization-policy-rule.yaml"}

// backendExamples attach policies to backend services TestE2E creates in
// the emulator first; a real project has none of that name, so TestGCP
// never applies them.
var backendExamples = []string{"attachment.yaml"}

// gcpReadyWithin bounds each object's wait for Ready against real GCP, where
// one operation takes seconds to tens of seconds and a policy's operations
// run one at a time.
const gcpReadyWithin = 10 * time.Minute

// gcpEnv is what TestGCP needs from the environment.
type gcpEnv struct {
	project    string
	creds      gcp.Credentials
	enterprise bool
}

// gcpEnvFromOS reads the environment; it returns why the test cannot run
// when something is missing.
func gcpEnvFromOS() (gcpEnv, string) {
	e := gcpEnv{project: os.Getenv(envGCPProject), enterprise: os.Getenv(envGCPEnterprise) == "true"}
	if e.project == "" {
		return e, fmt.Sprintf("set %s to a GCP project (and %s or %s) to run the e2e suite against real GCP: `make test-gcp`, see docs/development.md",
			envGCPProject, envGCPCredentials, envGCPToken)
	}
	switch path := cmpOr(os.Getenv(envGCPCredentials), os.Getenv(envADC)); {
	case os.Getenv(envGCPToken) != "":
		e.creds = gcp.Credentials{Source: gcp.SourceAccessToken, Data: []byte(os.Getenv(envGCPToken))}
	case path != "":
		data, err := os.ReadFile(path)
		if err != nil {
			return e, fmt.Sprintf("%s: cannot read the credentials file: %v", envGCPCredentials, err)
		}
		e.creds = gcp.Credentials{Source: gcp.SourceSecret, Data: data}
	default:
		return e, fmt.Sprintf("%s is set but no credentials: set %s (a credentials JSON file) or %s (e.g. `gcloud auth print-access-token`)",
			envGCPProject, envGCPCredentials, envGCPToken)
	}
	if ep := os.Getenv(envGCPEndpoint); ep != "" {
		e.creds.Endpoint = ep
	}
	return e, ""
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TestExamplesNotAppliedExist keeps examplesNotApplied honest: a renamed
// folder would otherwise be applied against the emulator unnoticed.
func TestExamplesNotAppliedExist(t *testing.T) {
	for dir := range examplesNotApplied {
		if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
			t.Errorf("examplesNotApplied names %s, which is not a folder: %v", dir, err)
		}
	}
}

// TestGCP applies every example the emulator suite applies to a real GCP
// project, with the GCP policy names prefixed by a random run id, waits for
// each to be Ready, checks GCP holds what they describe, deletes them and
// checks GCP no longer has them. It is skipped unless E2E_GCP_PROJECT and
// credentials are set (`make test-gcp`). A last sweep deletes any policy of
// this run still in GCP, so a failed run leaves nothing billed behind.
func TestGCP(t *testing.T) {
	env, why := gcpEnvFromOS()
	if why != "" {
		t.Skip(why)
	}
	if testing.Short() {
		t.Skip("e2e: skipped with -short")
	}
	ctx := context.Background()
	opts, err := gcp.ClientOptions(ctx, env.creds)
	if err != nil {
		t.Fatalf("credentials: %v", err)
	}
	svc, err := compute.NewService(ctx, opts...)
	if err != nil {
		t.Fatal(err)
	}
	prefix := runPrefix(t)
	t.Logf("project %s, GCP policy names prefixed %q", env.project, prefix)

	objs := gcpExamples(t, env, prefix)
	regions := map[string]bool{"": true}
	for _, o := range objs {
		if r, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "region"); r != "" {
			regions[r] = true
		}
	}
	// Registered first, so it runs last: after the provider has deleted what
	// it could, remove whatever this run left in GCP.
	t.Cleanup(func() { sweepGCP(t, svc, env.project, regions, prefix) })
	for _, o := range objs {
		if o.GetKind() != v1beta1.SecurityPolicyKind {
			continue
		}
		region, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "region")
		if _, err := policyGet(svc, env.project, region, meta.GetExternalName(o)); err == nil {
			t.Fatalf("GCP policy %s already exists in %s: this run would adopt it; refusing", meta.GetExternalName(o), env.project)
		}
	}

	// Real GCP needs no node: its own API server and the provider binary as a
	// process (E2E_PROVIDER_BIN, else built now).
	bin, err := provider.Binary(t.TempDir(), provider.BinEnv)
	if err != nil {
		t.Fatalf("the provider binary: %v", err)
	}
	cp := controlplane.StartT(t, controlplane.Options{CRDDirs: []string{repo.CRDDir()}, Scheme: kube.SchemeT(t)})
	prov := &provider.Process{Bin: bin, Kubeconfig: cp.KubeconfigPath, LogPath: filepath.Join(t.TempDir(), "provider.log"),
		Label: "e2e-gcp", Args: []string{"--debug", "--metrics-bind-address=0", "--health-probe-bind-address=0"}}
	s := &suite{gcp: svc, project: env.project, kube: cp.Client, abort: prov.ExitedUnexpectedly}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("provider log, last 80 lines:\n%s", prov.Tail(80))
		}
		prov.Kill()
	})
	s.configureGCP(t, env)
	prov.Start(t)

	// examples/import observes a policy made elsewhere.
	imported := prefix + "legacy-console-policy"
	s.gcpDoWithin(t, 2*time.Minute, env.project, "", func() (*compute.Operation, error) {
		return svc.SecurityPolicies.Insert(env.project, &compute.SecurityPolicy{Name: imported, Description: "made outside Kubernetes"}).Do()
	})

	start := time.Now()
	applied := s.apply(t, objs)
	var mrs []*unstructuredObject
	for _, o := range applied {
		if o.GroupVersionKind().Group == v1beta1.Group {
			mrs = append(mrs, o)
		}
	}
	for _, o := range mrs {
		s.waitReadyWithin(t, gcpReadyWithin, o)
	}
	t.Logf("%d managed resources Ready in %s", len(mrs), time.Since(start).Round(time.Second))

	for _, o := range mrs {
		region, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "region")
		switch o.GetKind() {
		case v1beta1.SecurityPolicyKind:
			sp, err := s.gcpPolicy(env.project, region, meta.GetExternalName(o))
			if err != nil {
				t.Errorf("%s: %v", o.GetName(), err)
				continue
			}
			t.Logf("%-24s rules in GCP: %v", sp.Name, armor.RulesOf(sp))
		case v1beta1.SecurityPolicyRuleKind:
			name, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "securityPolicy")
			action, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "action")
			prio, _, _ := unstructured.NestedInt64(o.Object, "spec", "forProvider", "priority")
			sp, err := s.gcpPolicy(env.project, region, name)
			if err != nil {
				t.Errorf("%s: %v", o.GetName(), err)
				continue
			}
			if !slices.ContainsFunc(sp.Rules, func(r *compute.SecurityPolicyRule) bool { return r.Priority == prio && r.Action == action }) {
				t.Errorf("%s: GCP policy %s has no %s rule at priority %d: %v", o.GetName(), name, action, prio, armor.RulesOf(sp))
			}
		}
	}

	// Delete rule objects first, then policies, as a user tearing down would.
	slices.SortStableFunc(mrs, func(a, b *unstructuredObject) int {
		return map[bool]int{true: 0, false: 1}[a.GetKind() == v1beta1.SecurityPolicyRuleKind] -
			map[bool]int{true: 0, false: 1}[b.GetKind() == v1beta1.SecurityPolicyRuleKind]
	})
	for _, o := range mrs {
		if err := s.kube.Delete(ctx, o); err != nil && !kerrors.IsNotFound(err) {
			t.Errorf("delete %s: %v", o.GetName(), err)
		}
	}
	for _, o := range mrs {
		s.eventually(t, gcpReadyWithin, o.GetName()+" to be gone", func() error {
			err := s.kube.Get(ctx, client.ObjectKeyFromObject(o), o.DeepCopy())
			if kerrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("still there: %v", err)
		})
	}
	for _, o := range mrs {
		region, _, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "region")
		if o.GetKind() != v1beta1.SecurityPolicyKind || o.GetName() == prefix+"legacy-console-policy" {
			continue
		}
		if _, err := s.gcpPolicy(env.project, region, meta.GetExternalName(o)); err == nil {
			t.Errorf("GCP policy %s still exists after its SecurityPolicy was deleted", meta.GetExternalName(o))
		}
	}
	if _, err := s.gcpPolicy(env.project, "", imported); err != nil {
		t.Errorf("the observe-only import deleted %s from GCP: %v", imported, err)
	}
	s.gcpDoWithin(t, 2*time.Minute, env.project, "", func() (*compute.Operation, error) {
		return svc.SecurityPolicies.Delete(env.project, imported).Do()
	})
}

// runPrefix is a GCP-name-safe prefix unique to this run.
func runPrefix(t *testing.T) string {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return "e2e-" + hex.EncodeToString(b) + "-"
}

// gcpExamples reads the examples TestE2E applies, minus provider configs
// (TestGCP makes its own) and, without Cloud Armor Enterprise, the examples
// that need it. Every policy name, reference and external name gets prefix.
func gcpExamples(t *testing.T, env gcpEnv, prefix string) []*unstructuredObject {
	t.Helper()
	var out []*unstructuredObject
	for _, dir := range exampleDirs(t) {
		if filepath.Base(dir) == "providerconfig" {
			continue
		}
		out = append(out, readObjects(t, dir)...)
	}
	if !env.enterprise {
		var kept []*unstructuredObject
		skip := map[string]bool{}
		for _, f := range enterpriseExamples {
			for _, o := range readObjects(t, repo.Path("examples", "features", f)) {
				skip[o.GetKind()+"/"+o.GetName()] = true
			}
		}
		for _, o := range out {
			if skip[o.GetKind()+"/"+o.GetName()] {
				t.Logf("not applying %s %s: it needs Cloud Armor Enterprise (set %s=true)", o.GetKind(), o.GetName(), envGCPEnterprise)
				continue
			}
			kept = append(kept, o)
		}
		out = kept
	}
	skipOrg := map[string]bool{}
	for _, f := range append(slices.Clone(organizationExamples), backendExamples...) {
		for _, o := range readObjects(t, repo.Path("examples", "features", f)) {
			skipOrg[o.GetKind()+"/"+o.GetName()] = true
		}
	}
	out = slices.DeleteFunc(out, func(o *unstructuredObject) bool {
		if skipOrg[o.GetKind()+"/"+o.GetName()] {
			t.Logf("not applying %s %s: it needs an organization these credentials administer, or a backend service TestE2E makes in its emulator", o.GetKind(), o.GetName())
			return true
		}
		return false
	})
	for _, o := range out {
		if o.GroupVersionKind().Group != v1beta1.Group {
			continue
		}
		o.SetName(prefix + o.GetName())
		if ext := meta.GetExternalName(o); ext != "" {
			meta.SetExternalName(o, prefix+ext)
		}
		if ref, ok, _ := unstructured.NestedString(o.Object, "spec", "forProvider", "securityPolicyRef", "name"); ok {
			_ = unstructured.SetNestedField(o.Object, prefix+ref, "spec", "forProvider", "securityPolicyRef", "name")
		}
	}
	return out
}

// exampleDirs lists the folders directly under examples/ that TestE2E applies.
func exampleDirs(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(repo.Path("examples"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		p := repo.Path("examples", e.Name())
		if _, skip := examplesNotApplied[p]; e.IsDir() && !skip {
			out = append(out, p)
		}
	}
	return out
}

// configureGCP creates the Secret and ClusterProviderConfig "default" with
// the real credentials. The Secret lives only in this run's API server.
func (s *suite) configureGCP(t *testing.T, env gcpEnv) {
	t.Helper()
	ctx := context.Background()
	const ns, name, key = "crossplane-system", "gcp-credentials", "credentials"
	if err := s.kube.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil && !kerrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if err := s.kube.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string][]byte{key: env.creds.Data}}); err != nil {
		t.Fatal(err)
	}
	source := xpv2.CredentialsSourceSecret
	if env.creds.Source == gcp.SourceAccessToken {
		source = pcv1beta1.CredentialsSourceAccessToken
	}
	cpc := &pcv1beta1.ClusterProviderConfig{ObjectMeta: metav1.ObjectMeta{Name: "default"},
		Spec: pcv1beta1.ClusterProviderConfigSpec{ProjectID: env.project, Endpoint: endpoint(env.creds.Endpoint),
			Credentials: pcv1beta1.ClusterProviderCredentials{Source: source,
				SecretRef: &xpv2.SecretKeySelector{Key: key, SecretReference: xpv2.SecretReference{Namespace: ns, Name: name}}}}}
	if err := s.kube.Create(ctx, cpc); err != nil {
		t.Fatal(err)
	}
}

// endpoint is a ClusterProviderConfig's spec.endpoint: unset for GCP's own.
func endpoint(ep string) *string {
	if ep == "" {
		return nil
	}
	return &ep
}

// gcpDoWithin is gcpDo with a longer bound for real GCP operations.
func (s *suite) gcpDoWithin(t *testing.T, timeout time.Duration, project, region string, call func() (*compute.Operation, error)) {
	t.Helper()
	op, err := call()
	if err != nil {
		t.Fatalf("direct GCP write: %v", err)
	}
	s.waitOperation(t, timeout, project, region, op)
}

func policyGet(svc *compute.Service, project, region, name string) (*compute.SecurityPolicy, error) {
	if region == "" {
		return svc.SecurityPolicies.Get(project, name).Do()
	}
	return svc.RegionSecurityPolicies.Get(project, region, name).Do()
}

// sweepGCP deletes every policy whose name starts with prefix in the global
// scope and the regions given, and logs what it had to delete. A passing run
// leaves nothing to sweep: anything found then fails the test.
func sweepGCP(t *testing.T, svc *compute.Service, project string, regions map[string]bool, prefix string) {
	passed := !t.Failed()
	filter := fmt.Sprintf("name eq %s.*", prefix)
	for region := range regions {
		var names []string
		var err error
		if region == "" {
			var l *compute.SecurityPolicyList
			if l, err = svc.SecurityPolicies.List(project).Filter(filter).Do(); err == nil {
				for _, p := range l.Items {
					names = append(names, p.Name)
				}
			}
		} else {
			var l *compute.SecurityPolicyList
			if l, err = svc.RegionSecurityPolicies.List(project, region).Filter(filter).Do(); err == nil {
				for _, p := range l.Items {
					names = append(names, p.Name)
				}
			}
		}
		if err != nil {
			t.Errorf("sweep %s/%s: list: %v: delete policies named %s* by hand", project, cmpOr(region, "global"), err, prefix)
			continue
		}
		for _, n := range names {
			if !strings.HasPrefix(n, prefix) {
				continue
			}
			var err error
			if region == "" {
				_, err = svc.SecurityPolicies.Delete(project, n).Do()
			} else {
				_, err = svc.RegionSecurityPolicies.Delete(project, region, n).Do()
			}
			t.Logf("sweep: deleting %s/%s/%s left by this run: %v", project, cmpOr(region, "global"), n, err)
			if passed {
				t.Errorf("the run passed but left GCP policy %s behind", n)
			}
		}
	}
}
