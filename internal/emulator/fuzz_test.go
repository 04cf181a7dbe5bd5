package emulator

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fuzzTargets are the calls whose bodies or queries go through decoding and
// validation.
var fuzzTargets = []struct{ method, path string }{
	{"POST", "/compute/v1/projects/p/global/securityPolicies"},
	{"PATCH", "/compute/v1/projects/p/global/securityPolicies/base"},
	{"POST", "/compute/v1/projects/p/global/securityPolicies/base/addRule"},
	{"POST", "/compute/v1/projects/p/global/securityPolicies/base/patchRule?priority=100&updateMask=rate_limit_options.enforce_on_key"},
	{"POST", "/compute/v1/projects/p/global/securityPolicies/base/patchRule?priority=100"},
	{"POST", "/compute/v1/projects/p/global/securityPolicies/base/setLabels"},
	{"POST", "/compute/v1/projects/p/regions/r/securityPolicies"},
}

// FuzzRequest feeds arbitrary bodies to the mutating endpoints. Whatever
// arrives, the emulator must answer 200 or a 4xx with a JSON body, never
// crash or answer 5xx. The seeds in testdata/fuzz/FuzzRequest also run as a
// normal unit test.
func FuzzRequest(f *testing.F) {
	for _, s := range []string{
		`{"name":"x","rules":[{"action":"allow","priority":2147483647,"match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["*"]}}}]}`,
		`{"action":"deny(403)","priority":5,"match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["10.0.0.0/8"]}},"headerAction":{}}`,
		`{"labels":{"a":"b"},"labelFingerprint":"42WmSpB8rSM="}`,
		`{"name":`, `[]`, `null`, `{"rules":[null]}`, `{"priority":1e40}`,
	} {
		for i := range fuzzTargets {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, target uint8, body []byte) {
		s, err := New(Options{Auth: AuthAny, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		seedPolicy(t, s)
		tg := fuzzTargets[int(target)%len(fuzzTargets)]
		rec := httptest.NewRecorder()
		s.ServeHTTP(rec, httptest.NewRequest(tg.method, tg.path, strings.NewReader(string(body))))
		if rec.Code != 200 && (rec.Code < 400 || rec.Code >= 500) {
			t.Errorf("%s %s: status %d for body %q: %s", tg.method, tg.path, rec.Code, body, rec.Body)
		}
		if !json.Valid(rec.Body.Bytes()) {
			t.Errorf("response is not JSON: %q", rec.Body)
		}
		// The state must still render.
		for _, p := range s.Snapshot() {
			if _, err := json.Marshal(p); err != nil {
				t.Errorf("state does not render: %v", err)
			}
		}
	})
}

// seedPolicy creates policy "base" with a rule at priority 100.
func seedPolicy(t *testing.T, s *Server) {
	body := `{"name":"base","rules":[
	 {"action":"allow","priority":2147483647,"match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["*"]}}},
	 {"action":"throttle","priority":100,"match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["*"]}},
	  "rateLimitOptions":{"conformAction":"allow","exceedAction":"deny(429)","enforceOnKey":"IP",
	   "rateLimitThreshold":{"count":10,"intervalSec":60}}}]}`
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/projects/p/global/securityPolicies", strings.NewReader(body)))
	if rec.Code != 200 {
		t.Fatalf("seed policy: %d %s", rec.Code, rec.Body)
	}
}
