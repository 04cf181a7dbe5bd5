package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// changeSummary is what TestChangeLogs compares of one change log entry.
// AtProvider is the rule at the priority the test changes as GCP held it
// before the write (the snapshot's status.atProvider); ForProvider is that
// rule as the spec asked for it (spec.forProvider). Rules read
// "priority:action:ranges".
type changeSummary struct {
	Kind, Name, ExternalName, Operation string
	AtProvider, ForProvider             string
	Error                               string
}

// TestChangeLogs runs the provider with --enable-changelogs and the change
// logs sidecar beside it in its pod, on an emptyDir they share, as
// docs/security.md's DeploymentRuntimeConfig sets them up (the sidecar's
// image is cmd/changelogs-sidecar, which stands in for Crossplane's, pushed
// to the node's registry), and reads back the entries the sidecar logged:
// one per create, update and delete of a SecurityPolicy and a
// SecurityPolicyRule, and one for the correction of a change made in GCP
// behind the provider's back, each with the object, the operation, what GCP
// held before and what was asked for, and no credentials.
func TestChangeLogs(t *testing.T) {
	s := setupRuntime(t, func(p *platform.Platform, spec map[string]any) {
		img, err := p.Node.PushImage(context.Background(), "crossplane/changelogs-sidecar", "v0.0.1",
			[]string{"/changelogs-sidecar"}, map[string]string{"/changelogs-sidecar": sidecarBin(t)})
		if err != nil {
			t.Fatal(err)
		}
		mounts := []any{map[string]any{"name": "changelogs", "mountPath": "/var/run/changelogs"}}
		platform.SetArgsIn(spec, append(platform.ArgsIn(spec), "--enable-changelogs"))
		platform.ContainerIn(spec, platform.ProviderContainer)["volumeMounts"] = mounts
		sidecar := platform.ContainerIn(spec, "changelogs-sidecar")
		sidecar["image"], sidecar["volumeMounts"] = img, mounts
		platform.PodSpecIn(spec)["volumes"] = []any{map[string]any{"name": "changelogs", "emptyDir": map[string]any{}}}
	}, nil)
	pod, _, err := s.plat.ProviderPod(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// The sidecar's log: the entries on its stdout, its own errors (not
	// JSON) on stderr.
	sidecarLog := func() (string, error) {
		return s.plat.Node.Kubectl(context.Background(), "-n", platform.Namespace, "logs", pod, "-c", "changelogs-sidecar")
	}

	const policyName, ruleName = "changelogs-policy", "changelogs-rule"
	sp := armor.NewPolicy(policyName, func(p *v1beta1.SecurityPolicyParameters) {
		p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
		p.Rules = []v1beta1.PolicyRule{armor.AllowRule(1000, "10.0.0.0/8")}
	})
	s.create(t, sp)
	s.waitReady(t, sp)
	rule := armor.NewRule(ruleName, policyName, armor.AllowRule(2000, "192.0.2.0/24"))
	s.create(t, rule)
	s.waitReady(t, rule)
	s.waitGCPRules(t, s.project, "", policyName, []string{"1000:allow:10.0.0.0/8", "2000:allow:192.0.2.0/24", "2147483647:deny(403):*"})

	s.update(t, sp, func() { sp.Spec.ForProvider.Rules[0] = armor.AllowRule(1000, "10.1.0.0/16") })
	s.waitGCPRules(t, s.project, "", policyName, []string{"1000:allow:10.1.0.0/16", "2000:allow:192.0.2.0/24", "2147483647:deny(403):*"})
	s.waitReady(t, sp)
	s.update(t, rule, func() { rule.Spec.ForProvider.Match.Config.SrcIpRanges = []v1beta1.IPRange{"198.51.100.0/24"} })
	s.waitGCPRules(t, s.project, "", policyName, []string{"1000:allow:10.1.0.0/16", "2000:allow:198.51.100.0/24", "2147483647:deny(403):*"})
	s.waitReady(t, rule)

	// Someone opens the policy in the console; the provider puts it back
	// at its next poll, and the change log says what it found and what it
	// wrote.
	s.gcpDo(t, s.project, "", func() (*compute.Operation, error) {
		return s.gcp.SecurityPolicies.PatchRule(s.project, policyName, &compute.SecurityPolicyRule{Action: "allow",
			Match: &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1", Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: []string{"0.0.0.0/0"}}}}).
			Priority(1000).Do()
	})
	s.waitGCPRules(t, s.project, "", policyName, []string{"1000:allow:10.1.0.0/16", "2000:allow:198.51.100.0/24", "2147483647:deny(403):*"})

	s.delete(t, rule)
	s.waitGone(t, rule)
	s.delete(t, sp)
	s.waitGone(t, sp)
	s.waitGCPGone(t, s.project, "", policyName)

	// Each entry is written before the reconcile that made the change goes
	// on, so all seven are there once the objects are gone.
	var entries []map[string]any
	var lines [][]byte
	s.eventually(t, 10*time.Second, "seven change log entries", func() error {
		out, err := sidecarLog()
		if err != nil {
			return err
		}
		entries, lines = nil, nil
		for _, l := range strings.Split(out, "\n") {
			if !strings.HasPrefix(l, "{") {
				continue
			}
			var e map[string]any
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("entry %q is not JSON: %v", l, err)
			}
			if e["name"] == policyName || e["name"] == ruleName {
				entries, lines = append(entries, e), append(lines, []byte(l))
			}
		}
		if len(entries) < 7 {
			return fmt.Errorf("%d entries", len(entries))
		}
		return nil
	})
	var got []changeSummary
	var sample []byte
	for i, e := range entries {
		if p, _ := e["provider"].(string); !strings.HasPrefix(p, "provider-cloudarmor:") {
			t.Errorf("entry %s %s: provider %q, want provider-cloudarmor:<version>", e["kind"], e["name"], p)
		}
		if ts, _ := e["timestamp"].(string); ts == "" {
			t.Errorf("entry %s %s has no timestamp", e["kind"], e["name"])
		}
		if e["apiVersion"] != v1beta1.SchemeGroupVersion.String() {
			t.Errorf("entry %s %s: apiVersion %v, want %s", e["kind"], e["name"], e["apiVersion"], v1beta1.SchemeGroupVersion)
		}
		got = append(got, summarize(e))
		t.Logf("entry: %s %s %s %s %s", e["timestamp"], e["provider"], e["kind"], e["name"], e["operation"])
		if sample == nil && e["kind"] == v1beta1.SecurityPolicyKind && e["operation"] == "OPERATION_TYPE_UPDATE" {
			sample = lines[i]
		}
	}
	want := []changeSummary{
		{Kind: v1beta1.SecurityPolicyKind, Name: policyName, ExternalName: policyName, Operation: "OPERATION_TYPE_CREATE",
			ForProvider: "1000:allow:10.0.0.0/8"},
		// The snapshot is taken before the create, and a rule's external
		// name ("<policy>/<priority>") is set by its create: the create
		// entry has none, its spec names both.
		{Kind: v1beta1.SecurityPolicyRuleKind, Name: ruleName, ExternalName: "", Operation: "OPERATION_TYPE_CREATE",
			ForProvider: "2000:allow:192.0.2.0/24"},
		{Kind: v1beta1.SecurityPolicyKind, Name: policyName, ExternalName: policyName, Operation: "OPERATION_TYPE_UPDATE",
			AtProvider: "1000:allow:10.0.0.0/8", ForProvider: "1000:allow:10.1.0.0/16"},
		{Kind: v1beta1.SecurityPolicyRuleKind, Name: ruleName, ExternalName: policyName + "/2000", Operation: "OPERATION_TYPE_UPDATE",
			AtProvider: "2000:allow:192.0.2.0/24", ForProvider: "2000:allow:198.51.100.0/24"},
		{Kind: v1beta1.SecurityPolicyKind, Name: policyName, ExternalName: policyName, Operation: "OPERATION_TYPE_UPDATE",
			AtProvider: "1000:allow:0.0.0.0/0", ForProvider: "1000:allow:10.1.0.0/16"},
		{Kind: v1beta1.SecurityPolicyRuleKind, Name: ruleName, ExternalName: policyName + "/2000", Operation: "OPERATION_TYPE_DELETE",
			AtProvider: "2000:allow:198.51.100.0/24", ForProvider: "2000:allow:198.51.100.0/24"},
		{Kind: v1beta1.SecurityPolicyKind, Name: policyName, ExternalName: policyName, Operation: "OPERATION_TYPE_DELETE",
			AtProvider: "1000:allow:10.1.0.0/16", ForProvider: "1000:allow:10.1.0.0/16"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("change log entries, in the order written: -want, +got:\n%s", diff)
	}

	// The entries hold the objects, never the credentials they use: the
	// token is in a Secret the objects only name through their
	// ProviderConfig.
	raw, err := sidecarLog()
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{exampleToken, "Bearer", "cloudarmor-emulator-token"} {
		if strings.Contains(raw, secret) {
			t.Errorf("the change logs hold %q", secret)
		}
	}
	var indented bytes.Buffer
	if err := json.Indent(&indented, sample, "", "  "); err == nil {
		t.Logf("the SecurityPolicy's first update entry, as the sidecar wrote it (indented):\n%s", indented.String())
	}
}

// summarize reads a changeSummary from an entry as the sidecar wrote it.
func summarize(e map[string]any) changeSummary {
	str := func(v any) string { s, _ := v.(string); return s }
	snap, _ := e["snapshot"].(map[string]any)
	spec, _ := field(snap, "spec", "forProvider").(map[string]any)
	at, _ := field(snap, "status", "atProvider").(map[string]any)
	c := changeSummary{Kind: str(e["kind"]), Name: str(e["name"]), ExternalName: str(e["externalName"]),
		Operation: str(e["operation"]), Error: str(e["errorMessage"])}
	switch c.Kind {
	case v1beta1.SecurityPolicyKind:
		c.ForProvider = ruleAt(field(spec, "rules"), 1000)
		c.AtProvider = ruleAt(field(at, "rules"), 1000)
	case v1beta1.SecurityPolicyRuleKind:
		c.ForProvider = ruleString(spec)
		if r, ok := field(at, "rule").(map[string]any); ok {
			c.AtProvider = ruleString(r)
		}
	}
	return c
}

// field returns the value at path in nested JSON objects, or nil.
func field(o map[string]any, path ...string) any {
	var v any = o
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[p]
	}
	return v
}

// ruleAt returns the rule at priority among rules as "priority:action:ranges",
// or "" when there is none.
func ruleAt(rules any, priority float64) string {
	rs, _ := rules.([]any)
	for _, r := range rs {
		if m, ok := r.(map[string]any); ok && m["priority"] == priority {
			return ruleString(m)
		}
	}
	return ""
}

// ruleString reads a rule, of a spec or of status, as "priority:action:ranges".
func ruleString(r map[string]any) string {
	var ranges []string
	rs, _ := field(r, "match", "config", "srcIpRanges").([]any)
	for _, x := range rs {
		ranges = append(ranges, fmt.Sprint(x))
	}
	return fmt.Sprintf("%v:%v:%s", r["priority"], r["action"], strings.Join(ranges, ","))
}

// sidecarBin is cmd/changelogs-sidecar: the one `make build` put beside the
// provider binary, else built now.
func sidecarBin(t *testing.T) string {
	t.Helper()
	dir := repo.Path("_output", "bin")
	if bin := os.Getenv(provider.BinEnv); bin != "" {
		dir = filepath.Dir(bin)
	}
	bin := filepath.Join(dir, "changelogs-sidecar")
	if _, err := os.Stat(bin); err == nil {
		return bin
	}
	bin = filepath.Join(t.TempDir(), "changelogs-sidecar")
	build := exec.Command("go", "build", "-o", bin, "./cmd/changelogs-sidecar")
	build.Dir = repo.Root()
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build ./cmd/changelogs-sidecar: %v\n%s", err, b)
	}
	return bin
}
