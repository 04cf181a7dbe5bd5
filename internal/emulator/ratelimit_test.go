package emulator

import (
	"encoding/json"
	"net/http"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRateLimitNormalisation replays reference cases 21 and 22 (recording R6,
// whose facts are in the reference): empty enums and empty arrays are
// dropped, plain empty strings kept, and patchRule with an updateMask sets or
// clears exactly the named paths.
func TestRateLimitNormalisation(t *testing.T) {
	em := Start(t, Options{})
	base := em.Endpoint() + "projects/p/global/securityPolicies"
	insert := `{"name":"rl","rules":[
	 {"action":"allow","priority":2147483647,"match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["*"]}}},
	 {"action":"throttle","priority":1000,"match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["*"]}},
	  "rateLimitOptions":{"conformAction":"allow","exceedAction":"deny(429)","enforceOnKey":"","enforceOnKeyName":"",
	   "enforceOnKeyConfigs":[{"enforceOnKeyType":"IP"}],"rateLimitThreshold":{"count":10,"intervalSec":60}}},
	 {"action":"throttle","priority":2000,"headerAction":{},"match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["*"]}},
	  "rateLimitOptions":{"conformAction":"allow","exceedAction":"deny(429)","enforceOnKey":"ALL","enforceOnKeyConfigs":[],
	   "rateLimitThreshold":{"count":10,"intervalSec":60}}}]}`
	mustStatus(t, "insert", 200)(rawCall(t, "POST", base, insert, nil))
	want := map[string]any{
		"1000": map[string]any{"conformAction": "allow", "exceedAction": "deny(429)", "enforceOnKeyName": "",
			"enforceOnKeyConfigs": []any{map[string]any{"enforceOnKeyType": "IP"}},
			"rateLimitThreshold":  map[string]any{"count": float64(10), "intervalSec": float64(60)}},
		"2000": map[string]any{"conformAction": "allow", "exceedAction": "deny(429)", "enforceOnKey": "ALL",
			"rateLimitThreshold": map[string]any{"count": float64(10), "intervalSec": float64(60)}},
	}
	if diff := cmp.Diff(want, rateLimits(t, base+"/rl")); diff != "" {
		t.Errorf("after insert: -want, +got:\n%s", diff)
	}

	mask := "?updateMask=rate_limit_options.enforce_on_key%2Crate_limit_options.enforce_on_key_configs"
	mustStatus(t, "patchRule 1000", 200)(rawCall(t, "POST", base+"/rl/patchRule"+mask+"&priority=1000",
		`{"action":"throttle","priority":1000,"rateLimitOptions":{"conformAction":"allow","exceedAction":"deny(429)","enforceOnKey":"IP","enforceOnKeyConfigs":[]}}`, nil))
	mustStatus(t, "patchRule 2000", 200)(rawCall(t, "POST", base+"/rl/patchRule"+mask+"&priority=2000",
		`{"action":"throttle","priority":2000,"rateLimitOptions":{"conformAction":"allow","exceedAction":"deny(429)","enforceOnKey":"","enforceOnKeyConfigs":[{"enforceOnKeyType":"HTTP_PATH"}]}}`, nil))
	want["1000"] = map[string]any{"conformAction": "allow", "exceedAction": "deny(429)", "enforceOnKeyName": "", "enforceOnKey": "IP",
		"rateLimitThreshold": map[string]any{"count": float64(10), "intervalSec": float64(60)}}
	want["2000"] = map[string]any{"conformAction": "allow", "exceedAction": "deny(429)",
		"enforceOnKeyConfigs": []any{map[string]any{"enforceOnKeyType": "HTTP_PATH"}},
		"rateLimitThreshold":  map[string]any{"count": float64(10), "intervalSec": float64(60)}}
	if diff := cmp.Diff(want, rateLimits(t, base+"/rl")); diff != "" {
		t.Errorf("after patchRule with updateMask: -want, +got:\n%s", diff)
	}
}

// mustStatus checks the status of a rawCall.
func mustStatus(t *testing.T, what string, want int) func(*http.Response, string) {
	return func(res *http.Response, body string) {
		t.Helper()
		if res.StatusCode != want {
			t.Fatalf("%s: want status %d, got %d: %s", what, want, res.StatusCode, body)
		}
	}
}

// rateLimits returns rateLimitOptions by priority from a GET of the policy.
func rateLimits(t *testing.T, url string) map[string]any {
	t.Helper()
	_, body := rawCall(t, "GET", url, "", nil)
	var p struct {
		Rules []map[string]any `json:"rules"`
	}
	if err := json.Unmarshal([]byte(body), &p); err != nil {
		t.Fatal(err)
	}
	out := map[string]any{}
	for _, r := range p.Rules {
		if rl, ok := r["rateLimitOptions"]; ok {
			out[strconv.FormatFloat(r["priority"].(float64), 'f', -1, 64)] = rl
		}
	}
	return out
}
