package testcmd

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
	networksecurity "google.golang.org/api/networksecurity/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/internal/validatecmd"
)

const (
	liveProject = "test-project"
	liveRegion  = "us-central1"
)

// livePolicy is the policy live.cases.yaml tests: an office range, a
// partners address group, an organization group --live cannot read, and a
// throttle on /api.
func livePolicy(name string) *compute.SecurityPolicy {
	ranges := func(r ...string) *compute.SecurityPolicyRuleMatcher {
		return &compute.SecurityPolicyRuleMatcher{VersionedExpr: "SRC_IPS_V1", Config: &compute.SecurityPolicyRuleMatcherConfig{SrcIpRanges: r}}
	}
	expr := func(e string) *compute.SecurityPolicyRuleMatcher {
		return &compute.SecurityPolicyRuleMatcher{Expr: &compute.Expr{Expression: e}}
	}
	return &compute.SecurityPolicy{Name: name, Rules: []*compute.SecurityPolicyRule{
		{Priority: 900, Action: "throttle", Match: expr("request.path == '/api' && inIpRange(origin.ip, '203.0.113.0/24')"),
			RateLimitOptions: &compute.SecurityPolicyRuleRateLimitOptions{ConformAction: "allow", ExceedAction: "deny(429)", EnforceOnKey: "IP",
				RateLimitThreshold: &compute.SecurityPolicyRuleRateLimitOptionsThreshold{Count: 2, IntervalSec: 60}}},
		{Priority: 1000, Action: "allow", Match: ranges("203.0.113.0/24")},
		{Priority: 1100, Action: "allow", Match: expr("evaluateAddressGroup('partners', origin.ip)")},
		{Priority: 1200, Action: "deny(404)", Match: expr("request.path == '/corp' && evaluateOrganizationAddressGroup('corp', origin.ip)")},
		{Priority: 2147483647, Action: "deny(403)", Match: ranges("*")},
	}}
}

// seedLive starts an emulator holding livePolicy globally and in
// liveRegion, and the partners group at both locations, made with the
// official clients.
func seedLive(t *testing.T) *emulator.Running {
	t.Helper()
	em := emulator.Start(t, emulator.Options{DefaultTier: emulator.TierEnterprisePaygo})
	ctx := context.Background()
	ns, err := em.NewNetworkSecurityService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range []string{"global", liveRegion} {
		parent := "projects/" + liveProject + "/locations/" + loc
		if _, err := ns.Projects.Locations.AddressGroups.Create(parent, &networksecurity.AddressGroup{Type: "IPV4", Capacity: 10,
			Items: []string{"192.0.2.0/28"}}).AddressGroupId("partners").Do(); err != nil {
			t.Fatal(err)
		}
		eventually(t, func() error {
			_, err := ns.Projects.Locations.AddressGroups.Get(parent + "/addressGroups/partners").Do()
			return err
		})
	}
	svc, err := em.NewService(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SecurityPolicies.Insert(liveProject, livePolicy("office")).Do(); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.RegionSecurityPolicies.Insert(liveProject, liveRegion, livePolicy("office")).Do(); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() error { _, err := svc.SecurityPolicies.Get(liveProject, "office").Do(); return err })
	eventually(t, func() error {
		_, err := svc.RegionSecurityPolicies.Get(liveProject, liveRegion, "office").Do()
		return err
	})
	return em
}

// eventually retries get until it succeeds: the emulator's writes are
// operations.
func eventually(t *testing.T, get func() error) {
	t.Helper()
	var err error
	for range 100 {
		if err = get(); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal(err)
}

func TestRunLive(t *testing.T) {
	em := seedLive(t)
	token := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(token, []byte("emulator"), 0o600); err != nil {
		t.Fatal(err)
	}
	creds := validatecmd.Credentials{AccessTokenFile: token}
	type want struct {
		status int
		golden string
	}
	cases := map[string]struct {
		reason string
		cfg    Config
		want   want
	}{
		"Global": {
			reason: "The cases run against the global policy as the emulator holds it, the project's address group read, the organization's noted.",
			cfg:    Config{Cases: "testdata/live.cases.yaml", Live: "projects/test-project/global/securityPolicies/office", Endpoint: em.URL(), Credentials: creds},
			want:   want{status: ExitPass, golden: "live-global"},
		},
		"Regional": {
			reason: "A regional policy reads the group of its region.",
			cfg:    Config{Cases: "testdata/live.cases.yaml", Live: "projects/test-project/regions/us-central1/securityPolicies/office", Endpoint: em.URL(), Credentials: creds},
			want:   want{status: ExitPass, golden: "live-regional"},
		},
		"NotFound": {
			reason: "A policy GCP does not have is bad input.",
			cfg:    Config{Cases: "testdata/live.cases.yaml", Live: "projects/test-project/global/securityPolicies/nope", Endpoint: em.URL(), Credentials: creds},
			want:   want{status: ExitUsage, golden: "live-not-found"},
		},
		"BadName": {
			reason: "--live takes a policy's path.",
			cfg:    Config{Cases: "testdata/live.cases.yaml", Live: "office", Endpoint: em.URL(), Credentials: creds},
			want:   want{status: ExitUsage, golden: "live-bad-name"},
		},
		"WithManifests": {
			reason: "--live reads the policy from GCP: manifests too are a mistake.",
			cfg: Config{Cases: "testdata/live.cases.yaml", Manifests: []string{"testdata/manifests.yaml"},
				Live: "projects/test-project/global/securityPolicies/office", Endpoint: em.URL(), Credentials: creds},
			want: want{status: ExitUsage, golden: "live-with-manifests"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			status := RunContext(context.Background(), tc.cfg, &out, &errOut)
			// The emulator's port changes from run to run.
			got := strings.ReplaceAll(out.String()+"--- stderr\n"+errOut.String(), em.URL(), "EMULATOR")
			path := filepath.Join("testdata", tc.want.golden+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			golden, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if diff := cmp.Diff(tc.want.status, status); diff != "" {
				t.Errorf("\n%s\nRunContext(...): -want status, +got status:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(string(golden), got); diff != "" {
				t.Errorf("\n%s\nRunContext(...): -want output, +got output:\n%s", tc.reason, diff)
			}
		})
	}
}
