package testcmd

import (
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// A CasesFile is what --cases reads.
type CasesFile struct {
	// Policy is the SecurityPolicy under test: name (namespace default) or
	// namespace/name. --live replaces it (and Manifests) with a policy in
	// GCP.
	Policy string `json:"policy"`
	// Manifests are manifest files or directories, relative to the cases
	// file, read in addition to --filename.
	Manifests []string `json:"manifests,omitempty"`
	// Cases are the requests and what Cloud Armor should do with them.
	Cases []Case `json:"cases,omitempty"`
	// Streams are sequences of requests on a simulated clock, for the
	// rate limits of throttle and rate_based_ban rules.
	Streams []Stream `json:"streams,omitempty"`
}

// A Stream is a named sequence of steps; every step sends one request, or
// the same request repeat times, every so often.
type Stream struct {
	Name  string `json:"name"`
	Steps []Step `json:"requests"`
}

// A Step is one request of a stream, possibly repeated. Expect is checked
// on every request of the step.
type Step struct {
	// Name of the step, for the report; optional.
	Name string `json:"name,omitempty"`
	// At is when the step's first request arrives, since the stream's
	// start; default: when the previous step's last one did.
	At *metav1.Duration `json:"at,omitempty"`
	// Repeat sends the request this many times (default 1)...
	Repeat int `json:"repeat,omitempty"`
	// Every this long (default 0: all at once).
	Every   *metav1.Duration `json:"every,omitempty"`
	Request Request          `json:"request"`
	Expect  Expect           `json:"expect"`
}

// A Case is one request and its expected outcome.
type Case struct {
	Name    string  `json:"name"`
	Request Request `json:"request"`
	Expect  Expect  `json:"expect"`
}

// A Request is a case's request; see policyeval.Request.
type Request struct {
	IP                string            `json:"ip"`
	UserIP            string            `json:"userIp,omitempty"`
	RegionCode        string            `json:"regionCode,omitempty"`
	ASN               *int64            `json:"asn,omitempty"`
	TLSJA3Fingerprint string            `json:"tlsJa3Fingerprint,omitempty"`
	TLSJA4Fingerprint string            `json:"tlsJa4Fingerprint,omitempty"`
	Method            string            `json:"method,omitempty"`
	Path              string            `json:"path,omitempty"`
	Query             string            `json:"query,omitempty"`
	Scheme            string            `json:"scheme,omitempty"`
	Headers           map[string]string `json:"headers,omitempty"`
}

// An Expect is what a case expects. Fields left out are not checked.
type Expect struct {
	// Action of the enforced rule: allow, deny(403), redirect, throttle...
	Action string `json:"action,omitempty"`
	// Priority of the enforced rule (or of the rule that is not evaluable).
	Priority *int64 `json:"priority,omitempty"`
	// RedirectTarget of a redirect rule.
	RedirectTarget string `json:"redirectTarget,omitempty"`
	// Preview is the priority of the preview rule that would have matched;
	// 0 is not checked, -1 means none.
	Preview *int64 `json:"preview,omitempty"`
	// NotEvaluable expects the verdict "not evaluable offline".
	NotEvaluable bool `json:"notEvaluable,omitempty"`
	// Effective is, in a stream, what a throttle or rate_based_ban rule did
	// with the request: its conformAction (allow) or its exceedAction.
	Effective string `json:"effective,omitempty"`
	// Banned is, in a stream, whether the request's key is banned.
	Banned *bool `json:"banned,omitempty"`
}

var actionPattern = regexp.MustCompile(`^(allow|deny\((403|404|429|502)\)|redirect|throttle|rate_based_ban|fairshare)$`)

// readCases reads and checks a cases file; errors name the file and field.
// policy is required when needPolicy (not with --live).
func readCases(file string, needPolicy bool) (*CasesFile, error) {
	b, err := os.ReadFile(file) //nolint:gosec // reading the file the user named is the point
	if err != nil {
		return nil, fmt.Errorf("cannot read cases file: %w", err)
	}
	var c CasesFile
	if err := yaml.UnmarshalStrict(b, &c); err != nil {
		return nil, fmt.Errorf("%s: %s", file, jsonMessage(err))
	}
	var problems []string
	bad := func(field, format string, a ...any) {
		problems = append(problems, fmt.Sprintf("%s: %s: %s", file, field, fmt.Sprintf(format, a...)))
	}
	if c.Policy == "" && needPolicy {
		bad("policy", "required: the SecurityPolicy to test, as name or namespace/name")
	}
	if len(c.Cases) == 0 && len(c.Streams) == 0 {
		bad("cases", "required: at least one case (or stream)")
	}
	names := map[string]bool{}
	for i, k := range c.Cases {
		f := fmt.Sprintf("cases[%d]", i)
		switch {
		case k.Name == "":
			bad(f+".name", "required")
		case names[k.Name]:
			bad(f+".name", "%q is the name of another case", k.Name)
		}
		names[k.Name] = true
		checkRequest(bad, f, k.Request, k.Expect, false)
	}
	for i, st := range c.Streams {
		f := fmt.Sprintf("streams[%d]", i)
		switch {
		case st.Name == "":
			bad(f+".name", "required")
		case names[st.Name]:
			bad(f+".name", "%q is the name of another case or stream", st.Name)
		}
		names[st.Name] = true
		if len(st.Steps) == 0 {
			bad(f+".requests", "required: at least one request")
		}
		var last time.Duration
		for j, step := range st.Steps {
			g := fmt.Sprintf("%s.requests[%d]", f, j)
			if step.At != nil {
				if step.At.Duration < last {
					bad(g+".at", "%s is before the previous request (%s): a stream's clock never goes back", step.At.Duration, last)
				}
				last = step.At.Duration
			}
			if step.Repeat < 0 || step.Repeat > maxRepeat {
				bad(g+".repeat", "%d is not between 1 and %d", step.Repeat, maxRepeat)
			}
			if step.Every != nil && step.Every.Duration < 0 {
				bad(g+".every", "%s is negative", step.Every.Duration)
			}
			if step.Every != nil && step.Repeat > 1 {
				last += time.Duration(step.Repeat-1) * step.Every.Duration
			}
			checkRequest(bad, g, step.Request, step.Expect, true)
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(problems, "\n"))
	}
	for i, m := range c.Manifests {
		if !filepath.IsAbs(m) {
			c.Manifests[i] = filepath.Join(filepath.Dir(file), m)
		}
	}
	return &c, nil
}

// maxRepeat bounds a step's repeat.
const maxRepeat = 100000

// checkRequest checks a request and its expectation at field f.
func checkRequest(bad func(field, format string, a ...any), f string, r Request, e Expect, stream bool) {
	if r.IP == "" {
		bad(f+".request.ip", "required")
	} else if _, err := netip.ParseAddr(r.IP); err != nil {
		bad(f+".request.ip", "%q is not an IP address", r.IP)
	}
	if r.UserIP != "" {
		if _, err := netip.ParseAddr(r.UserIP); err != nil {
			bad(f+".request.userIp", "%q is not an IP address", r.UserIP)
		}
	}
	switch {
	case e.Action == "" && !e.NotEvaluable:
		bad(f+".expect", "set action, or notEvaluable: true")
	case e.Action != "" && e.NotEvaluable:
		bad(f+".expect", "action and notEvaluable: true exclude each other")
	case e.Action != "" && !actionPattern.MatchString(e.Action):
		bad(f+".expect.action", "%q is not a Cloud Armor action (allow, deny(403|404|429|502), redirect, throttle, rate_based_ban, fairshare)", e.Action)
	}
	if e.Priority != nil && (*e.Priority < 0 || *e.Priority > 2147483647) {
		bad(f+".expect.priority", "%d is not a priority (0 to 2147483647)", *e.Priority)
	}
	if !stream && (e.Effective != "" || e.Banned != nil) {
		bad(f+".expect", "effective and banned apply to streams only: a single request always conforms")
	}
	if e.Effective != "" && !effectivePattern.MatchString(e.Effective) {
		bad(f+".expect.effective", "%q is not a conform or exceed action (allow, deny(403|404|429|502), redirect)", e.Effective)
	}
}

var effectivePattern = regexp.MustCompile(`^(allow|deny\((403|404|429|502)\)|redirect)$`)
