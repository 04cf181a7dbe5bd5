package emulator

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// An exchange is one request/response pair of a recording.
type exchange struct {
	method, url, reqBody string
	status               int
	respBody             string
}

var statusLine = regexp.MustCompile(`^(\d{3}) [A-Za-z]`)

// parseLog reads the recordings' format:
// request line, headers, blank, body, blank, status line, headers, blank,
// body, then "---".
func parseLog(t *testing.T, text string) []exchange {
	t.Helper()
	var out []exchange
	for _, block := range strings.Split(text, "\n---\n") {
		if strings.TrimSpace(block) == "" {
			continue
		}
		out = append(out, parseExchange(t, strings.TrimLeft(block, "\n")))
	}
	return out
}

func parseExchange(t *testing.T, block string) exchange {
	t.Helper()
	sc := bufio.NewScanner(strings.NewReader(block))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var ex exchange
	var lines []string
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	ex.method, ex.url, _ = strings.Cut(lines[0], " ")
	i := skipHeaders(lines, 1)
	var req []string
	for ; i < len(lines) && !statusLine.MatchString(lines[i]); i++ {
		req = append(req, lines[i])
	}
	if i == len(lines) {
		t.Fatalf("no status line in exchange %q", lines[0])
	}
	ex.reqBody = strings.TrimSpace(strings.Join(req, "\n"))
	ex.status, _ = strconv.Atoi(statusLine.FindStringSubmatch(lines[i])[1])
	i = skipHeaders(lines, i+1)
	ex.respBody = strings.TrimSpace(strings.Join(lines[i:], "\n"))
	return ex
}

// skipHeaders returns the index after the blank line ending a header block.
func skipHeaders(lines []string, i int) int {
	for ; i < len(lines) && lines[i] != ""; i++ {
	}
	return i + 1
}

// replayState carries what a real client would have learnt so far, so that
// placeholders in later requests can be filled in.
type replayState struct {
	project, policy string
	policyID        string
	op              string
	fingerprint     string
	labelFP         string
}

func (s *replayState) fill(text string) string {
	r := strings.NewReplacer("${projectId}", s.project, "${securityPolicyID}", s.policy,
		"${operationID}", s.op, `"fingerprint": "abcdef0123A="`, `"fingerprint": "`+s.fingerprint+`"`,
		`"labelFingerprint": "abcdef0123A="`, `"labelFingerprint": "`+s.labelFP+`"`)
	return r.Replace(text)
}

// learn records ids, names and fingerprints from a response.
func (s *replayState) learn(v map[string]any) {
	switch v["kind"] {
	case "compute#operation":
		s.op, _ = v["name"].(string)
	case "compute#securityPolicy":
		s.policyID, _ = v["id"].(string)
		s.fingerprint, _ = v["fingerprint"].(string)
		s.labelFP, _ = v["labelFingerprint"].(string)
	}
}

// normalizedKeys are the values the recordings replaced with placeholders.
var normalizedKeys = map[string]any{
	"id": "000000000000000000000", "fingerprint": "abcdef0123A=", "labelFingerprint": "abcdef0123A=",
	"creationTimestamp": "2024-04-01T12:34:56.123456Z", "insertTime": "2024-04-01T12:34:56.123456Z",
	"startTime": "2024-04-01T12:34:56.123456Z", "endTime": "2024-04-01T12:34:56.123456Z",
	"user": "user@example.com", "targetId": "${securityPolicyID}",
}

// normalize rewrites an emulator response the way the recorder normalised
// GCP's. stripServerOnly removes ruleNumber and selfLinkWithId, which the
// recorder stripped from R1-R3.
func (s *replayState) normalize(v any, stripServerOnly bool) any {
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if stripServerOnly && core.ServerOnlyKeys[k] {
				continue
			}
			if n, ok := normalizedKeys[k]; ok {
				out[k] = n
				continue
			}
			out[k] = s.normalize(e, stripServerOnly)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.normalize(e, stripServerOnly)
		}
		return out
	case string:
		return s.placeholders().Replace(x)
	}
	return v
}

// placeholders maps what the emulator generated back to the recording's
// placeholders; values not yet learnt are left out.
func (s *replayState) placeholders() *strings.Replacer {
	var pairs []string
	for _, p := range [][2]string{{s.op, "${operationID}"}, {s.policyID, "${securityPolicyID}"},
		{s.project, "${projectId}"}, {s.policy, "${securityPolicyID}"}} {
		if p[0] != "" {
			pairs = append(pairs, p[0], p[1])
		}
	}
	return strings.NewReplacer(pairs...)
}

func TestConformance(t *testing.T) {
	files, err := filepath.Glob("testdata/recordings/R*_http.log")
	if err != nil || len(files) != 4 {
		t.Fatalf("want the 4 recordings R1-R4, got %v (%v)", files, err)
	}
	for _, f := range files {
		t.Run(strings.SplitN(filepath.Base(f), "_", 2)[0], func(t *testing.T) {
			b, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			replay(t, string(b))
		})
	}
}

// replay sends every exchange of a recording, in order, to a fresh emulator
// and compares status, content type and the normalised body.
func replay(t *testing.T, log string) {
	em := Start(t, Options{Seed: 42})
	st := &replayState{project: "conformance-project", policy: "conformance-policy"}
	strip := !strings.Contains(log, `"ruleNumber"`)
	for i, ex := range parseLog(t, log) {
		got := st.send(t, em, ex)
		if got.status != ex.status {
			t.Fatalf("exchange %d %s %s: status: want %d, got %d: %s", i, ex.method, ex.url, ex.status, got.status, got.body)
		}
		if ct := got.contentType; ct != "application/json; charset=UTF-8" {
			t.Errorf("exchange %d: Content-Type: want application/json; charset=UTF-8, got %q", i, ct)
		}
		var want, body map[string]any
		mustUnmarshal(t, ex.respBody, &want)
		mustUnmarshal(t, got.body, &body)
		st.learn(body)
		if diff := cmp.Diff(any(want), st.normalize(body, strip)); diff != "" {
			t.Errorf("exchange %d %s %s: response body: -want (recorded), +got:\n%s", i, ex.method, ex.url, diff)
		}
	}
}

type response struct {
	status      int
	contentType string
	body        string
}

func (s *replayState) send(t *testing.T, em *Running, ex exchange) response {
	t.Helper()
	url := s.fill(strings.Replace(ex.url, "https://compute.googleapis.com", em.URL(), 1))
	var body io.Reader
	if ex.reqBody != "" {
		body = strings.NewReader(s.fill(ex.reqBody))
	}
	req, err := http.NewRequest(ex.method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer conformance")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close() //nolint:errcheck // read fully below
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: res.StatusCode, contentType: res.Header.Get("Content-Type"), body: string(b)}
}

func mustUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("cannot parse JSON %q: %v", s, err)
	}
}
