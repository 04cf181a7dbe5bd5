package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
	"github.com/armorplane/provider-cloudarmor/test/framework/wait"
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

// TestChangeLogs runs the provider with --enable-changelogs against the
// change logs sidecar on a unix socket, as a DeploymentRuntimeConfig sets
// them up in a pod (docs/security.md), and reads back the entries the
// sidecar wrote: one per create, update and delete of a SecurityPolicy and
// a SecurityPolicyRule, and one for the correction of a change made in GCP
// behind the provider's back, each with the object, the operation, what GCP
// held before and what was asked for, and no credentials.
func TestChangeLogs(t *testing.T) {
	if testing.Short() {
		t.Skip("e2e: skipped with -short")
	}
	dir := t.TempDir()
	socket := filepath.Join(dir, "changelogs.sock")
	entries := filepath.Join(dir, "changelogs.jsonl")
	startSidecar(t, socket, entries)
	s := setup(t, "--enable-changelogs", "--changelogs-socket-path="+socket)

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
	var lines [][]byte
	s.eventually(t, 10*time.Second, "seven change log entries", func() error {
		var err error
		if lines, err = readLines(entries); err != nil {
			return err
		}
		if len(lines) < 7 {
			return fmt.Errorf("%d entries", len(lines))
		}
		return nil
	})
	var got []changeSummary
	var sample []byte
	for _, l := range lines {
		var e map[string]any
		if err := json.Unmarshal(l, &e); err != nil {
			t.Fatalf("entry %q is not JSON: %v", l, err)
		}
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
			sample = l
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
	raw, err := os.ReadFile(entries)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{exampleToken, "Bearer", "cloudarmor-emulator-token"} {
		if bytes.Contains(raw, []byte(secret)) {
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

// readLines returns the lines of the file at path.
func readLines(path string) ([][]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close() //nolint:errcheck // read only
	var lines [][]byte
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		if len(bytes.TrimSpace(sc.Bytes())) > 0 {
			lines = append(lines, bytes.Clone(sc.Bytes()))
		}
	}
	return lines, sc.Err()
}

// startSidecar runs the change logs sidecar (cmd/changelogs-sidecar: the
// one `make build` put beside the provider binary, else built now) on the
// unix socket at socket, its stdout, the entries, going to the file at out,
// and waits for the socket. It is stopped after the provider.
func startSidecar(t *testing.T, socket, out string) {
	t.Helper()
	bin := filepath.Join(filepath.Dir(providerBin), "changelogs-sidecar")
	if _, err := os.Stat(bin); err != nil {
		bin = filepath.Join(t.TempDir(), "changelogs-sidecar")
		build := exec.Command("go", "build", "-o", bin, "./cmd/changelogs-sidecar")
		build.Dir = repo.Root()
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if b, err := build.CombinedOutput(); err != nil {
			t.Fatalf("build ./cmd/changelogs-sidecar: %v\n%s", err, b)
		}
	}
	stdout, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "--socket-path="+socket)
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		_ = stdout.Close()
		if t.Failed() {
			t.Logf("changelogs-sidecar stderr:\n%s", stderr.String())
		}
	})
	abort := func() error {
		select {
		case err := <-exited:
			exited <- err
			return fmt.Errorf("the sidecar exited: %v\n%s", err, stderr.String())
		default:
			return nil
		}
	}
	wait.Eventually(t, 30*time.Second, "the change logs sidecar's socket", func() error {
		_, err := os.Stat(socket)
		return err
	}, wait.AbortOn(abort))
}
