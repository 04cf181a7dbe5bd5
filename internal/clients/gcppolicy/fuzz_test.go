package gcppolicy

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// ruleSeeds are JSON rules covering every field group, GCP-shaped.
var ruleSeeds = []string{
	`{}`,
	`{"action":"allow","priority":0,"match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["10.0.0.1/8","192.0.2.1","*","192.0.2.1/32"]}}}`,
	`{"kind":"compute#securityPolicyRule","action":"deny(403)","priority":2147483647,"description":"","preview":false,"headerAction":{}}`,
	`{"action":"deny(403)","priority":5,"match":{"expr":{"expression":"true","title":"t"},"exprOptions":{"recaptchaOptions":{"actionTokenSiteKeys":["a"]}}}}`,
	`{"action":"allow","priority":6,"networkMatch":{"srcIpRanges":["2001:DB8::1"],"destPorts":["2","1"],"srcAsns":[3,1],"userDefinedFields":[{"name":"b","values":["2","1"]},{"name":"a"}]}}`,
	`{"action":"throttle","priority":7,"rateLimitOptions":{"rateLimitThreshold":{"count":1,"intervalSec":60},"enforceOnKeyConfigs":[{"enforceOnKeyType":"IP"},{}],"exceedRedirectOptions":{}}}`,
	`{"action":"redirect","priority":8,"redirectOptions":{"type":"EXTERNAL_302","target":"https://x"},"preconfiguredWafConfig":{"exclusions":[{"targetRuleSet":"x","requestUrisToExclude":[{"op":"EQUALS","val":"/"},{}]},{}]}}`,
}

// FuzzNormalizeRule checks that NormalizeRule never panics, is idempotent,
// does not modify its input, that every rule is up to date with itself and
// with its normal form, and that both have the same status observation.
func FuzzNormalizeRule(f *testing.F) {
	for _, s := range ruleSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := &compute.SecurityPolicyRule{}
		if err := json.Unmarshal(data, r); err != nil {
			t.Skip()
		}
		before, _ := json.Marshal(r)
		n := NormalizeRule(r)
		if diff := cmp.Diff(n, NormalizeRule(n)); diff != "" {
			t.Errorf("NormalizeRule is not idempotent: -once, +twice:\n%s", diff)
		}
		if after, _ := json.Marshal(r); string(before) != string(after) {
			t.Errorf("NormalizeRule modified its input: %s became %s", before, after)
		}
		if ok, diff := RuleUpToDate(r, r); !ok {
			t.Errorf("RuleUpToDate(r, r) is false:\n%s", diff)
		}
		if ok, diff := RuleUpToDate(r, n); !ok {
			t.Errorf("RuleUpToDate(r, NormalizeRule(r)) is false:\n%s", diff)
		}
		_ = RuleUpdateMask(r, n)
		// Status shows what the comparison sees: the same for r and its
		// normal form.
		if diff := cmp.Diff(GenerateRuleObservation(r), GenerateRuleObservation(n)); diff != "" {
			t.Errorf("GenerateRuleObservation differs for r and NormalizeRule(r): -r, +normal:\n%s", diff)
		}
	})
}

// paramSeeds are JSON RuleParameters covering every field group.
var paramSeeds = []struct {
	priority int64
	params   string
}{
	{0, `{"action":"allow","match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["203.0.113.7","10.0.0.0/8"]}}}`},
	{v1beta1.DefaultRulePriority, `{"action":"deny(403)","description":"","preview":false}`},
	{1000, `{"action":"throttle","match":{"expr":{"expression":"true"}},"rateLimitOptions":{"enforceOnKey":"HTTP_HEADER","enforceOnKeyName":"X","rateLimitThreshold":{"count":5,"intervalSec":10},"exceedAction":"deny(429)"}}`},
	{2000, `{"action":"rate_based_ban","networkMatch":{"srcIpRanges":["b::1","*"],"ipProtocols":["udp","tcp"]},"rateLimitOptions":{"enforceOnKeyConfigs":[{"enforceOnKeyType":"IP"}],"banThreshold":{"count":1,"intervalSec":1},"banDurationSec":0}}`},
	{3000, `{"action":"allow","headerAction":{},"redirectOptions":{"type":"GOOGLE_RECAPTCHA"},"preconfiguredWafConfig":{"exclusions":[{"targetRuleSet":"x","requestBodiesToExclude":[{"op":"EQUALS_ANY"}]}]}}`},
}

// FuzzGenerateRule checks that GenerateRule never panics, that a generated
// rule is up to date with itself and with the same rule as GCP returns it
// (fill-ins added, ranges reordered, force-sent fields gone), and that a
// generated default rule always has a condition.
func FuzzGenerateRule(f *testing.F) {
	for _, s := range paramSeeds {
		f.Add(s.priority, []byte(s.params))
	}
	f.Fuzz(func(t *testing.T, priority int64, data []byte) {
		p := v1beta1.RuleParameters{}
		if err := json.Unmarshal(data, &p); err != nil {
			t.Skip()
		}
		desired := GenerateRule(priority, p)
		if ok, diff := RuleUpToDate(desired, GenerateRule(priority, p)); !ok {
			t.Errorf("RuleUpToDate(GenerateRule(x), GenerateRule(x)) is false:\n%s", diff)
		}
		observed := throughGCP(t, desired)
		if ok, diff := RuleUpToDate(desired, observed); !ok {
			t.Errorf("a generated rule differs from itself as GCP returns it:\n%s", diff)
		}
		if priority == v1beta1.DefaultRulePriority && desired.Match == nil && desired.NetworkMatch == nil {
			t.Errorf("a generated default rule has no condition")
		}
		if priority == 0 && !slices.Contains(desired.ForceSendFields, "Priority") {
			t.Errorf("priority 0 is not force-sent")
		}
	})
}

// throughGCP sends r over the wire the way the Go client does and adds the
// fill-ins GCP adds to what it returns.
func throughGCP(t *testing.T, r *compute.SecurityPolicyRule) *compute.SecurityPolicyRule {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatalf("cannot marshal rule: %v", err)
	}
	out := &compute.SecurityPolicyRule{}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("cannot unmarshal rule: %v", err)
	}
	out.Kind = "compute#securityPolicyRule"
	if out.HeaderAction == nil {
		out.HeaderAction = &compute.SecurityPolicyRuleHttpHeaderAction{}
	}
	if out.Match != nil && out.Match.Config != nil {
		slices.Reverse(out.Match.Config.SrcIpRanges)
	}
	if out.NetworkMatch != nil {
		slices.Reverse(out.NetworkMatch.SrcIpRanges)
	}
	return out
}
