package policyeval

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// wafVar is the hidden variable that carries the request to the WAF
// functions: CEL functions see their arguments only, so the rules
// language's evaluatePreconfiguredWaf(set, ...) is expanded, by a macro, to
// evaluatePreconfiguredWaf(@waf, set, ...). '@' keeps it out of reach of
// expressions, as CEL's own @result is.
const wafVar = "@waf"

// A wafRequest is a request as the WAF reads it.
type wafRequest struct {
	ip, method, uri, path string
	headers               [][2]string
	// hasBody: the request says it has a body (Content-Length above 0, or
	// Transfer-Encoding), which offline evaluation does not have.
	hasBody bool
}

func newWafRequest(r Request, ip string, headers map[string]any) wafRequest {
	w := wafRequest{ip: ip, method: or(r.Method, "GET"), path: or(r.Path, "/")}
	w.uri = w.path
	if q := strings.TrimPrefix(r.Query, "?"); q != "" {
		w.uri += "?" + q
	}
	for _, k := range slices.Sorted(maps.Keys(headers)) {
		v, _ := headers[k].(string)
		w.headers = append(w.headers, [2]string{k, v})
	}
	length, _ := headers["content-length"].(string)
	if n, err := strconv.Atoi(strings.TrimSpace(length)); err == nil && n > 0 {
		w.hasBody = true
	}
	if _, ok := headers["transfer-encoding"]; ok {
		w.hasBody = true
	}
	return w
}

// A wafCall is the WAF's view of one Evaluate: the request, the
// preconfiguredWafConfig of the rule being evaluated, the CRS matches per
// rule file (a request runs through each file once, whatever the number of
// rules that use it), and what the rule's verdict should say.
type wafCall struct {
	r       Request
	ip      string
	headers map[string]any
	req     *wafRequest

	exclusions []v1beta1.WafExclusion
	hits       map[string][]wafHit
	notes      []string
	warnings   []string
}

var wafCallType = types.NewOpaqueType("policyeval.wafCall")

// ConvertToNative implements ref.Val.
func (c *wafCall) ConvertToNative(reflect.Type) (any, error) {
	return nil, fmt.Errorf("the WAF request is not a value")
}

// ConvertToType implements ref.Val.
func (c *wafCall) ConvertToType(ref.Type) ref.Val {
	return types.NewErr("the WAF request is not a value")
}

// Equal implements ref.Val.
func (c *wafCall) Equal(o ref.Val) ref.Val { return types.Bool(o == ref.Val(c)) }

// Type implements ref.Val.
func (c *wafCall) Type() ref.Type { return wafCallType }

// Value implements ref.Val.
func (c *wafCall) Value() any { return c }

// begin starts a rule: its exclusions, and nothing to say yet.
func (c *wafCall) begin(cfg *v1beta1.PreconfiguredWafConfig) {
	c.exclusions, c.notes, c.warnings = nil, nil, nil
	if cfg != nil {
		c.exclusions = cfg.Exclusions
	}
}

func (c *wafCall) request() wafRequest {
	if c.req == nil {
		r := newWafRequest(c.r, c.ip, c.headers)
		c.req = &r
	}
	return *c.req
}

// A wafOptions is the second argument of evaluatePreconfiguredWaf.
type wafOptions struct {
	sensitivity   int
	optOut, optIn []string
}

// evaluate is evaluatePreconfiguredWaf(set, options): true when any
// signature of the set in scope matched the request ("Tune preconfigured
// WAF rules": "A request matches a preconfigured WAF rule if the request
// matches any of the signatures"), not on CRS's anomaly score.
func (c *wafCall) evaluate(set string, o wafOptions, unknownID int64) ref.Val {
	f, other, ok := resolveSet(set)
	switch {
	case !ok && strings.HasPrefix(set, "sourceiplist-"):
		c.notes = append(c.notes, set+" is a named IP address list, which offline evaluation does not have")
		return types.NewUnknown(unknownID, nil)
	case !ok:
		c.notes = append(c.notes, set+" has no OWASP CRS counterpart")
		return types.NewUnknown(unknownID, nil)
	}
	e, err := engine(f.file)
	if err != nil {
		return types.NewErr("%s: %v", set, err)
	}
	scope := wafScope{sensitivity: o.sensitivity,
		optOut: c.signatureIDs(set, "opt_out_rule_ids", o.optOut, f, e),
		optIn:  c.signatureIDs(set, "opt_in_rule_ids", o.optIn, f, e)}
	if c.hits == nil {
		c.hits = map[string][]wafHit{}
	}
	hits, ran := c.hits[f.file]
	if !ran {
		hits = e.run(c.request())
		c.hits[f.file] = hits
	}
	head := fmt.Sprintf("%s at sensitivity %d", set, o.sensitivity)
	if other != "" {
		head += fmt.Sprintf(" (CRS %s rules standing in for %s)", crsVersion, other)
	}
	matched, aside := c.classify(set, f, scope, hits)
	var out ref.Val
	switch {
	case len(matched) > 0:
		head, out = head+" matched: "+strings.Join(matched, "; "), types.True
	case c.request().hasBody:
		head, out = head+": no signature matched the request line, headers and cookies", types.NewUnknown(idWafBody, nil)
	default:
		head, out = head+": no signature matched", types.False
	}
	c.notes = append(c.notes, head+aside)
	return out
}

// classify sorts a set's hits into those that count and, in words, those that
// do not: out of scope, or on excluded fields only.
func (c *wafCall) classify(set string, f wafFamily, scope wafScope, hits []wafHit) (matched []string, aside string) {
	var excluded, outOfScope []string
	for _, h := range hits {
		switch {
		case !f.has(h.id):
		case !scope.in(h):
			outOfScope = append(outOfScope, outOfScopeWhy(h, scope))
		case c.excluded(set, h):
			excluded = append(excluded, strconv.Itoa(h.id))
		default:
			matched = append(matched, fmt.Sprintf("%d %s (%s)", h.id, h.msg, joinFields(h.variables)))
		}
	}
	if len(outOfScope) > 0 {
		aside += "; out of scope: " + strings.Join(outOfScope, ", ")
	}
	if len(excluded) > 0 {
		aside += "; on fields preconfiguredWafConfig excludes: " + strings.Join(excluded, ", ")
	}
	return matched, aside
}

func joinFields(fs []wafField) string {
	s := make([]string, len(fs))
	for i, f := range fs {
		s[i] = f.String()
	}
	return strings.Join(slices.Compact(s), ", ")
}

// A wafScope says which signatures of a set count: those at the
// sensitivity or below that are not opted out, and those opted in.
type wafScope struct {
	sensitivity   int
	optOut, optIn map[int]bool
}

func outOfScopeWhy(h wafHit, s wafScope) string {
	if s.optOut[h.id] {
		return fmt.Sprintf("%d (opted out)", h.id)
	}
	return fmt.Sprintf("%d (sensitivity %d)", h.id, h.paranoia)
}

func (s wafScope) in(h wafHit) bool {
	return s.optIn[h.id] || (h.paranoia <= s.sensitivity && !s.optOut[h.id])
}

// signatureRE reads Google's signature ids: owasp-crs-v030301-id942110-sqli
// (CRS 3.3.1), owasp-crs-v030001-id942100-sqli (3.0), owasp-crs-id942100-sqli.
var signatureRE = regexp.MustCompile(`^owasp-crs-(?:v\d{6}-)?id(\d{6})-[a-z]+$`)

func signatureID(s string) (int, bool) {
	m := signatureRE.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, false
	}
	id, err := strconv.Atoi(m[1])
	return id, err == nil
}

// signatureIDs reads an opt-in or opt-out list. An id that is not a CRS
// signature of the set, or that CRS crsVersion does not have (CRS 4
// renumbered and dropped some of 3.3's), is a warning, not silently
// ignored: the verdict may then differ from Cloud Armor's.
func (c *wafCall) signatureIDs(set, field string, list []string, f wafFamily, e *wafEngine) map[int]bool {
	out := map[int]bool{}
	for _, s := range list {
		id, ok := signatureID(s)
		switch {
		case !ok:
			c.warnings = append(c.warnings, fmt.Sprintf("%s: %s has %q, not a CRS signature id; ignored", set, field, s))
		case !f.has(id):
			c.warnings = append(c.warnings, fmt.Sprintf("%s: %s has %s, not a signature of the set; ignored", set, field, s))
		case !e.ids[id]:
			c.warnings = append(c.warnings, fmt.Sprintf("%s: %s has %s, which OWASP CRS %s does not have (renumbered or removed); ignored", set, field, s, crsVersion))
		default:
			out[id] = true
		}
	}
	return out
}

// wafOptionsOf reads evaluatePreconfiguredWaf's map argument.
func wafOptionsOf(v ref.Val) (wafOptions, error) {
	o := wafOptions{sensitivity: maxSensitivity}
	m, ok := v.(traits.Mapper)
	if !ok {
		return o, fmt.Errorf("the options are not a map")
	}
	for it := m.Iterator(); it.HasNext() == types.True; {
		k := it.Next()
		val := m.Get(k)
		var err error
		switch k {
		case types.String("sensitivity"):
			o.sensitivity, err = sensitivityOf(val)
		case types.String("opt_out_rule_ids"):
			o.optOut, err = stringsOf(val)
		case types.String("opt_in_rule_ids"):
			o.optIn, err = stringsOf(val)
		default:
			err = fmt.Errorf("unknown option %v", k)
		}
		if err != nil {
			return o, fmt.Errorf("%v: %w", k, err)
		}
	}
	return o, nil
}

func sensitivityOf(v ref.Val) (int, error) {
	n, ok := v.(types.Int)
	if !ok || n < 0 || n > maxSensitivity {
		return 0, fmt.Errorf("%v is not a sensitivity from 0 to %d", v, maxSensitivity)
	}
	return int(n), nil
}

func stringsOf(v ref.Val) ([]string, error) {
	out, err := v.ConvertToNative(reflect.TypeFor[[]string]())
	if err != nil {
		return nil, fmt.Errorf("not a list of strings")
	}
	return out.([]string), nil
}

// excluded says whether every request field a signature matched is one the
// rule's preconfiguredWafConfig excludes from the set (or from that
// signature). A signature that matched no request field (only variables of
// its own) is never excluded.
func (c *wafCall) excluded(set string, h wafHit) bool {
	var apply []v1beta1.WafExclusion
	for _, ex := range c.exclusions {
		if ex.TargetRuleSet == set && targetsSignature(ex.TargetRuleIds, h.id) {
			apply = append(apply, ex)
		}
	}
	if len(apply) == 0 || len(h.variables) == 0 {
		return false
	}
	for _, f := range h.variables {
		if !slices.ContainsFunc(apply, func(ex v1beta1.WafExclusion) bool { return c.excludes(ex, f) }) {
			return false
		}
	}
	return true
}

func targetsSignature(ids []string, id int) bool {
	if len(ids) == 0 {
		return true
	}
	return slices.ContainsFunc(ids, func(s string) bool { n, ok := signatureID(s); return ok && n == id })
}

// excludes says whether ex excludes a field, by the CRS variable that
// holds it: query parameters (by name), headers (by name, in any case),
// cookies (by name), and the URI (its path). Bodies are not evaluated.
func (c *wafCall) excludes(ex v1beta1.WafExclusion, f wafField) bool {
	switch f.variable {
	case "ARGS", "ARGS_GET", "ARGS_NAMES", "ARGS_GET_NAMES":
		return fieldMatches(ex.RequestQueryParamsToExclude, f.key, false)
	case "REQUEST_HEADERS", "REQUEST_HEADERS_NAMES":
		return fieldMatches(ex.RequestHeadersToExclude, f.key, true)
	case "REQUEST_COOKIES", "REQUEST_COOKIES_NAMES":
		return fieldMatches(ex.RequestCookiesToExclude, f.key, false)
	case "REQUEST_URI", "REQUEST_URI_RAW", "REQUEST_FILENAME", "REQUEST_BASENAME", "REQUEST_LINE":
		return fieldMatches(ex.RequestUrisToExclude, c.request().path, false)
	}
	return false
}

// fieldMatches applies an exclusion's ops (EQUALS, STARTS_WITH, ENDS_WITH,
// CONTAINS, EQUALS_ANY) to a field's name; fold compares in any case.
func fieldMatches(ps []v1beta1.WafExclusionFieldParams, name string, fold bool) bool {
	for _, p := range ps {
		val := ""
		if p.Val != nil {
			val = *p.Val
		}
		n := name
		if fold {
			n, val = strings.ToLower(n), strings.ToLower(val)
		}
		switch {
		case p.Op == "EQUALS_ANY",
			p.Op == "EQUALS" && n == val,
			p.Op == "STARTS_WITH" && strings.HasPrefix(n, val),
			p.Op == "ENDS_WITH" && strings.HasSuffix(n, val),
			p.Op == "CONTAINS" && strings.Contains(n, val):
			return true
		}
	}
	return false
}

// explain adds what the WAF found to a rule's why and warning.
func (c *wafCall) explain(why, warn string) (string, string) {
	if len(c.notes) > 0 {
		why += "; " + strings.Join(c.notes, "; ")
	}
	ws := c.warnings
	if warn != "" {
		ws = append([]string{warn}, ws...)
	}
	return why, strings.Join(ws, "; ")
}
