package dataplane

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
	"github.com/armorplane/provider-cloudarmor/internal/policyeval"
)

// HostSuffix ends every Host the data plane serves.
const HostSuffix = ".backend.local"

// StatusNotEvaluable answers a request whose verdict the emulator cannot
// know (an unknown attribute, a WAF rule, a reCAPTCHA challenge): no action
// of Cloud Armor answers 501, so it never reads as an enforced rule.
const StatusNotEvaluable = http.StatusNotImplemented

// A report is the body of every answer.
type report struct {
	Backend  string `json:"backend,omitempty"`
	Policy   string `json:"policy,omitempty"`
	ClientIP string `json:"clientIp,omitempty"`
	Status   int    `json:"status"`
	// Verdict is policyeval's summary, or why the request was not
	// evaluated.
	Verdict      string        `json:"verdict"`
	Priority     *int64        `json:"priority,omitempty"`
	Action       string        `json:"action,omitempty"`
	Effective    string        `json:"effective,omitempty"`
	RateKey      string        `json:"rateKey,omitempty"`
	PreviewMatch *previewMatch `json:"previewMatch,omitempty"`
	NotEvaluable string        `json:"notEvaluable,omitempty"`
	Location     string        `json:"location,omitempty"`
	Warnings     []string      `json:"warnings,omitempty"`
	// RequestHeadersAdded are the headerAction's headers as the echo
	// backend received them.
	RequestHeadersAdded map[string]string `json:"requestHeadersAdded,omitempty"`
	Echo                *echoed           `json:"echo,omitempty"`

	forward bool // to the echo backend
	added   []header
}

// previewMatch is the rule in preview that would have acted.
type previewMatch struct {
	Priority int64  `json:"priority"`
	Action   string `json:"action"`
}

// echoed is what the echo backend received.
type echoed struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	Query  string `json:"query,omitempty"`
}

type header struct{ name, value string }

// An answer is what Cloud Armor does with a request.
type answer struct {
	status   int
	location string // of a 302
	forward  bool   // to the backend
	reason   string // why StatusNotEvaluable
}

// decide maps a verdict to Cloud Armor's answer: allow passes; deny(N)
// answers N; redirect EXTERNAL_302 answers 302; a throttle or
// rate_based_ban answers as its effective action (conform or exceed) does.
func decide(v policyeval.Verdict) answer {
	if v.NotEvaluable != "" {
		return answer{status: StatusNotEvaluable, reason: v.NotEvaluable}
	}
	action, redirect := v.Action, v.Redirect
	if v.RateLimit != nil {
		action, redirect = v.Effective, v.RateLimit.ExceedRedirectOptions
	}
	switch {
	case action == v1beta1.ActionAllow:
		return answer{status: http.StatusOK, forward: true}
	case action == v1beta1.ActionRedirect:
		return redirectAnswer(redirect)
	case denyStatus(action) != 0:
		return answer{status: denyStatus(action)}
	}
	return answer{status: StatusNotEvaluable, reason: fmt.Sprintf("not evaluable offline: action %q", action)}
}

// redirectAnswer is a redirect's answer. GOOGLE_RECAPTCHA sends the client
// to Google's challenge page, whose outcome the emulator cannot know.
func redirectAnswer(o *v1beta1.RedirectOptions) answer {
	switch {
	case o != nil && o.Type == "EXTERNAL_302" && o.Target != nil:
		return answer{status: http.StatusFound, location: *o.Target}
	case o != nil && o.Type == "GOOGLE_RECAPTCHA":
		return answer{status: StatusNotEvaluable, reason: "not evaluable offline: a GOOGLE_RECAPTCHA redirect challenges the client with reCAPTCHA"}
	}
	return answer{status: StatusNotEvaluable, reason: "not evaluable offline: a redirect without an EXTERNAL_302 target"}
}

// denyStatus is N of deny(N), 403 of deny; 0 for other actions.
func denyStatus(action string) int {
	if action == "deny" {
		return http.StatusForbidden
	}
	s, ok := strings.CutPrefix(action, "deny(")
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s, ")"))
	if err != nil {
		return 0
	}
	return n
}

// fill writes a verdict and its answer into the report.
func (rep *report) fill(v policyeval.Verdict, an answer) {
	rep.Status, rep.Location, rep.forward = an.status, an.location, an.forward
	rep.Verdict, rep.Warnings, rep.NotEvaluable = v.Summary(), v.Warnings, an.reason
	priority := v.Priority
	rep.Priority, rep.Action, rep.Effective, rep.RateKey = &priority, v.Action, v.Effective, v.RateKey
	if v.Preview != nil {
		rep.PreviewMatch = &previewMatch{Priority: v.Preview.Priority, Action: v.Preview.Action}
	}
	if an.forward {
		for _, h := range v.HeadersToAdd {
			value := ""
			if h.HeaderValue != nil {
				value = *h.HeaderValue
			}
			rep.added = append(rep.added, header{h.HeaderName, value})
		}
	}
}

// BackendPath is the path of the backend service a Host names:
// <backend>.<project>.backend.local is projects/<project>/global/backendServices/<backend>,
// <backend>.<region>.<project>.backend.local its regional counterpart.
func BackendPath(host string) (string, bool) {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	rest, ok := strings.CutSuffix(host, HostSuffix)
	if !ok {
		return "", false
	}
	labels := strings.Split(rest, ".")
	if slices.Contains(labels, "") {
		return "", false
	}
	switch len(labels) {
	case 2:
		return "projects/" + labels[1] + "/global/backendServices/" + labels[0], true
	case 3:
		return "projects/" + labels[2] + "/regions/" + labels[1] + "/backendServices/" + labels[0], true
	}
	return "", false
}

// clientIP is origin.ip: the connection's remote address, or
// ClientIPHeader when trusted and set.
func clientIP(r *http.Request, trust bool) (string, error) {
	if v := r.Header.Get(ClientIPHeader); trust && v != "" {
		a, err := netip.ParseAddr(strings.TrimSpace(v))
		if err != nil || a.Zone() != "" {
			return "", fmt.Errorf("%s: %q is not an IP address", ClientIPHeader, v)
		}
		return a.Unmap().String(), nil
	}
	ap, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return "", fmt.Errorf("cannot read the client address %q", r.RemoteAddr)
	}
	return ap.Addr().Unmap().String(), nil
}

// request is the request as rules see it. The data plane serves plain
// HTTP, so request.scheme is http; the client IP header is the emulator's,
// not the client's, and is left out.
func request(r *http.Request, ip string) policyeval.Request {
	headers := map[string]string{"host": r.Host}
	for k, vs := range r.Header {
		if http.CanonicalHeaderKey(k) == ClientIPHeader {
			continue
		}
		headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	scheme := "http"
	if r.TLS != nil {
		scheme = "https"
	}
	return policyeval.Request{IP: ip, Method: r.Method, Path: r.URL.EscapedPath(), Query: r.URL.RawQuery,
		Scheme: scheme, Headers: headers}
}

// addressGroups are the groups a policy of the backend at path may name:
// the project's at the backend's location (global, or its region), and
// every organization's there (the emulator does not know which
// organization holds a project), each by its name and its full path.
func addressGroups(path string, groups []*networksecurity.AddressGroup) []policyeval.AddressGroup {
	parts := strings.Split(path, "/") // projects/P/global/... or projects/P/regions/R/...
	project, location := parts[1], parts[2]
	if location == "regions" {
		location = parts[3]
	}
	var out []policyeval.AddressGroup
	for _, g := range groups {
		org := strings.HasPrefix(g.Parent, "organizations/")
		if g.Location != location || (!org && g.Parent != "projects/"+project) {
			continue
		}
		full := networksecurity.Path(g.Parent, g.Location, g.Name)
		for _, name := range []string{g.Name, full} {
			out = append(out, policyeval.AddressGroup{Name: name, Organization: org, Items: g.Items})
		}
	}
	return out
}
