package policyeval

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// maxExprChars is Cloud Armor's limit on an expression's length (the CRD's
// too); a longer one is not evaluated.
const maxExprChars = 2048

// An AddressGroup is a named list of addresses and ranges that
// evaluateAddressGroup (or, with Organization, evaluateOrganizationAddressGroup)
// tests origin.ip against.
type AddressGroup struct {
	Name         string
	Organization bool
	Items        []string
}

// A Request is what a rule can inspect. Fields left empty take the defaults
// noted; the ones with no sensible default (region code, ASN, TLS
// fingerprints) are unknown when empty, and a verdict that depends on them
// is "not evaluable offline".
type Request struct {
	// IP is origin.ip, the client address as the load balancer sees it.
	IP string
	// UserIP is origin.user_ip. Empty: read from the policy's
	// userIpRequestHeaders, else origin.ip.
	UserIP string
	// RegionCode is origin.region_code, a two-letter ISO 3166-1 code.
	RegionCode string
	// ASN is origin.asn; nil is unknown.
	ASN *int64
	// TLSJA3Fingerprint and TLSJA4Fingerprint are origin.tls_ja3_fingerprint
	// and origin.tls_ja4_fingerprint.
	TLSJA3Fingerprint string
	TLSJA4Fingerprint string
	// Method is request.method; default GET.
	Method string
	// Path is request.path; default "/".
	Path string
	// Query is request.query, without the "?".
	Query string
	// Scheme is request.scheme; default https.
	Scheme string
	// Headers are request.headers; names are made lower case.
	Headers map[string]string
}

// An Outcome is what evaluating one rule found.
type Outcome string

// Outcomes.
const (
	Match        Outcome = "match"
	NoMatch      Outcome = "no match"
	NotEvaluable Outcome = "not evaluable"
	NotReached   Outcome = "not evaluated"
)

// A RuleTrace is one rule's part in a verdict.
type RuleTrace struct {
	Priority int64
	Action   string
	Source   string
	Preview  bool
	Outcome  Outcome
	// Why the rule matched or not, in words.
	Why string
}

// A Verdict is what Cloud Armor would do with a request.
type Verdict struct {
	// NotEvaluable is set ("not evaluable offline: <what>") when the
	// outcome depends on something that cannot be known offline; Priority
	// then names the rule that could not be decided, and Action is empty.
	NotEvaluable string

	// Priority and Action of the enforced rule.
	Priority int64
	Action   string
	// Source of the enforced rule (see Rule.Source).
	Source string
	// Status is the HTTP status of a deny action.
	Status int
	// Redirect of a redirect action.
	Redirect *v1beta1.RedirectOptions
	// RateLimit of a throttle, rate_based_ban or fairshare action: a single
	// request conforms (conformAction applies); the options say what
	// happens over the threshold.
	RateLimit *v1beta1.RateLimitOptions
	// Effective is what a Stream did with a request a throttle or
	// rate_based_ban rule enforced: its conformAction, or its exceedAction
	// when the key is over the rate or banned. Empty outside a Stream.
	Effective string
	// RateKey is the rate-limit key the request counted against (Stream).
	RateKey string
	// Banned is true when the request's key is banned (Stream).
	Banned bool
	// HeadersToAdd of the enforced rule's headerAction.
	HeadersToAdd []v1beta1.HTTPHeaderOption

	// Preview is the first rule in preview that matched before the enforced
	// rule: the one Cloud Armor would log as previewSecurityPolicy.
	Preview *RuleTrace

	// Trace has every rule in evaluation order.
	Trace []RuleTrace
	// Warnings are approximations the verdict rests on (an expression that
	// failed with an error counted as no match, an assumed default rule).
	Warnings []string
}

// Summary is a verdict in one line: "allow at priority 1000", or the
// not-evaluable message.
func (v Verdict) Summary() string {
	if v.NotEvaluable != "" {
		return fmt.Sprintf("%s (priority %d)", v.NotEvaluable, v.Priority)
	}
	s := fmt.Sprintf("%s at priority %d", v.Action, v.Priority)
	switch {
	case v.Redirect != nil && v.Redirect.Target != nil:
		s += fmt.Sprintf(" (%s to %s)", v.Redirect.Type, *v.Redirect.Target)
	case v.Redirect != nil:
		s += fmt.Sprintf(" (%s)", v.Redirect.Type)
	case v.RateLimit != nil && v.Effective != "":
		s += ": " + v.Effective
		if v.Banned {
			s += ", banned"
		}
		s += " (key " + v.RateKey + ")"
	case v.RateLimit != nil:
		s += " (" + DescribeRateLimit(v.RateLimit) + ")"
	}
	if v.Preview != nil {
		s += fmt.Sprintf("; preview rule %d (%s) would have matched", v.Preview.Priority, v.Preview.Action)
	}
	return s
}

// An Evaluator evaluates policies; it holds the address groups and the
// compiled expressions. It is safe for concurrent use.
type Evaluator struct {
	env       *cel.Env
	groups    map[string][]netip.Prefix
	orgGroups map[string][]netip.Prefix

	mu    sync.Mutex
	progs map[string]compiled
}

type compiled struct {
	prg     cel.Program
	problem string // why the expression cannot be evaluated
}

// New returns an Evaluator that knows groups. An item that is neither an
// address nor a CIDR is an error.
func New(groups ...AddressGroup) (*Evaluator, error) {
	e := &Evaluator{groups: map[string][]netip.Prefix{}, orgGroups: map[string][]netip.Prefix{}, progs: map[string]compiled{}}
	for _, g := range groups {
		m := e.groups
		if g.Organization {
			m = e.orgGroups
		}
		ps := []netip.Prefix{}
		for _, it := range g.Items {
			p, err := parseRange(it)
			if err != nil {
				return nil, fmt.Errorf("address group %s: %w", g.Name, err)
			}
			ps = append(ps, p)
		}
		m[g.Name] = append(m[g.Name], ps...)
	}
	env, err := newEnv(e.lookupGroup)
	if err != nil {
		return nil, fmt.Errorf("cannot build the rules language environment: %w", err)
	}
	e.env = env
	return e, nil
}

func (e *Evaluator) lookupGroup(org bool, name, ip string) ref.Val {
	m, id := e.groups, idAddressGroup
	if org {
		m, id = e.orgGroups, idOrgAddressGroup
	}
	ps, ok := m[name]
	if !ok {
		return types.NewUnknown(id, nil)
	}
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return types.NewErr("address group %s: %q is not an IP address", name, ip)
	}
	a = a.Unmap()
	for _, p := range ps {
		if p.Contains(a) {
			return types.True
		}
	}
	return types.False
}

func (e *Evaluator) program(text string) compiled {
	e.mu.Lock()
	c, ok := e.progs[text]
	e.mu.Unlock()
	if ok {
		return c
	}
	c = e.compile(text)
	e.mu.Lock()
	if len(e.progs) > 4096 {
		clear(e.progs)
	}
	e.progs[text] = c
	e.mu.Unlock()
	return c
}

func (e *Evaluator) compile(text string) compiled {
	if strings.TrimSpace(text) == "" {
		return compiled{problem: "the expression is empty"}
	}
	if n := len([]rune(text)); n > maxExprChars {
		return compiled{problem: fmt.Sprintf("the expression has %d characters, over Cloud Armor's %d", n, maxExprChars)}
	}
	checked, iss := e.env.Compile(text)
	if iss.Err() != nil {
		first := iss.Errors()[0]
		return compiled{problem: fmt.Sprintf("the expression is not in the rules language this evaluator knows: %s (line %d, column %d)",
			first.Message, first.Location.Line(), first.Location.Column()+1)}
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return compiled{problem: fmt.Sprintf("the expression is of type %s, not bool", t)}
	}
	prg, err := e.env.Program(checked, cel.CostLimit(1_000_000))
	if err != nil {
		return compiled{problem: "the expression cannot be evaluated: " + err.Error()}
	}
	return compiled{prg: prg}
}

// Evaluate evaluates p against r. An error means the request itself is
// wrong (origin.ip is not an address), not the policy.
func (e *Evaluator) Evaluate(p Policy, r Request) (Verdict, error) {
	act, ip, err := activation(p, r)
	if err != nil {
		return Verdict{}, err
	}
	rules := append([]Rule(nil), p.Rules...)
	sort.SliceStable(rules, func(i, j int) bool { return rules[i].Priority < rules[j].Priority })
	var v Verdict
	decided := false
	for _, rule := range rules {
		t := RuleTrace{Priority: rule.Priority, Action: rule.Action, Source: rule.Source, Preview: rule.Preview != nil && *rule.Preview}
		if decided {
			t.Outcome, t.Why = NotReached, "a higher-priority rule decided"
			v.Trace = append(v.Trace, t)
			continue
		}
		var warn string
		t.Outcome, t.Why, warn = e.match(rule, act, ip)
		if warn != "" {
			v.Warnings = append(v.Warnings, fmt.Sprintf("priority %d: %s", rule.Priority, warn))
		}
		v.Trace = append(v.Trace, t)
		switch {
		case t.Preview && t.Outcome == Match:
			if v.Preview == nil {
				tt := t
				v.Preview = &tt
			}
		case t.Preview && t.Outcome == NotEvaluable:
			v.Warnings = append(v.Warnings, fmt.Sprintf("preview rule %d: %s", rule.Priority, t.Why))
		case t.Outcome == NotEvaluable:
			v.NotEvaluable, v.Priority, v.Source = t.Why, rule.Priority, rule.Source
			decided = true
		case t.Outcome == Match:
			enforce(&v, rule)
			decided = true
		}
	}
	if !decided {
		// Only when Rules holds no default rule: Merge always adds one.
		d := AssumedDefaultRule()
		enforce(&v, d)
		v.Trace = append(v.Trace, RuleTrace{Priority: d.Priority, Action: d.Action, Source: d.Source, Outcome: Match, Why: "the default rule matches every request"})
	}
	if v.Source == SourceAssumed && v.NotEvaluable == "" {
		v.Warnings = append(v.Warnings, "no manifest sets the default rule: assumed allow, the default rule GCP creates")
	}
	return v, nil
}

func enforce(v *Verdict, r Rule) {
	v.Priority, v.Action, v.Source = r.Priority, r.Action, r.Source
	v.Status = denyStatus(r.Action)
	v.Redirect = r.RedirectOptions
	if r.Action == v1beta1.ActionThrottle || r.Action == v1beta1.ActionRateBasedBan || r.Action == v1beta1.ActionFairshare {
		v.RateLimit = r.RateLimitOptions
	}
	if r.HeaderAction != nil {
		v.HeadersToAdd = r.HeaderAction.RequestHeadersToAdds
	}
}

// denyStatus is the status of deny(STATUS); 0 for other actions.
func denyStatus(action string) int {
	s, ok := strings.CutPrefix(action, "deny(")
	if !ok {
		if action == "deny" {
			return 403
		}
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSuffix(s, ")"))
	if err != nil {
		return 0
	}
	return n
}

// match evaluates one rule's condition.
func (e *Evaluator) match(r Rule, act map[string]any, ip netip.Addr) (o Outcome, why, warn string) {
	if r.NetworkMatch != nil {
		return NotEvaluable, "not evaluable offline: networkMatch (Layer 3/4 conditions of CLOUD_ARMOR_NETWORK policies)", ""
	}
	m := r.Match
	switch {
	case m == nil && r.Priority == DefaultPriority:
		return Match, "the default rule matches every request", ""
	case m == nil:
		return NotEvaluable, "not evaluable offline: the rule has no match condition", ""
	case m.Expr != nil:
		if c, ok := act[wafVar].(*wafCall); ok {
			c.begin(r.PreconfiguredWafConfig)
			defer func() { why, warn = c.explain(why, warn) }()
		}
		return e.matchExpr(m.Expr.Expression, act)
	case m.VersionedExpr != nil && *m.VersionedExpr == "SRC_IPS_V1" && m.Config != nil:
		return matchRanges(m.Config.SrcIpRanges, ip)
	case m.VersionedExpr != nil:
		return NotEvaluable, fmt.Sprintf("not evaluable offline: versionedExpr %s", *m.VersionedExpr), ""
	}
	return NotEvaluable, "not evaluable offline: the match condition is empty", ""
}

func matchRanges(ranges []v1beta1.IPRange, ip netip.Addr) (Outcome, string, string) {
	var list []string
	for _, s := range ranges {
		list = append(list, string(s))
		if s == "*" {
			return Match, fmt.Sprintf("srcIpRanges has *: %s matches", ip), ""
		}
		p, err := parseRange(string(s))
		if err != nil {
			return NotEvaluable, "not evaluable offline: srcIpRanges: " + err.Error(), ""
		}
		if p.Contains(ip) {
			return Match, fmt.Sprintf("origin.ip %s is in %s", ip, s), ""
		}
	}
	return NoMatch, fmt.Sprintf("origin.ip %s is in none of %s", ip, strings.Join(list, ", ")), ""
}

func (e *Evaluator) matchExpr(text string, act map[string]any) (o Outcome, why, warn string) {
	c := e.program(text)
	if c.problem != "" {
		return NotEvaluable, "not evaluable offline: " + c.problem, ""
	}
	defer func() {
		// CEL's interpreter is not expected to panic; if it does, the
		// rule is undecided, never a silent match or miss.
		if p := recover(); p != nil {
			o, why, warn = NotEvaluable, fmt.Sprintf("not evaluable offline: the evaluator failed: %v", p), ""
		}
	}()
	out, _, err := c.prg.Eval(act)
	switch {
	case out != nil && types.IsUnknown(out):
		return NotEvaluable, "not evaluable offline: " + describeUnknown(out.(*types.Unknown)), ""
	case err != nil:
		return NoMatch, fmt.Sprintf("evaluation error, counted as no match: %v", err),
			fmt.Sprintf("the expression failed (%v) and is counted as no match", err)
	}
	b, ok := out.(types.Bool)
	if !ok {
		return NotEvaluable, fmt.Sprintf("not evaluable offline: the expression gave %v, not a bool", out), ""
	}
	if b {
		return Match, "expression is true", ""
	}
	return NoMatch, "expression is false", ""
}

func describeUnknown(u *types.Unknown) string {
	seen := map[string]bool{}
	var what []string
	for _, id := range u.IDs() {
		w, ok := unknownWhat[id]
		if !ok {
			w = "an unknown value"
		}
		if !seen[w] {
			seen[w] = true
			what = append(what, w)
		}
	}
	sort.Strings(what)
	return strings.Join(what, ", ")
}

// activation binds the attributes of r. Region code, ASN and TLS
// fingerprints are unknown when r leaves them out; token.* and
// request.body/params always are.
func activation(p Policy, r Request) (map[string]any, netip.Addr, error) {
	ip, err := netip.ParseAddr(strings.TrimSpace(r.IP))
	if err != nil || ip.Zone() != "" {
		return nil, netip.Addr{}, fmt.Errorf("ip: %q is not an IP address", r.IP)
	}
	ip = ip.Unmap()
	headers := map[string]any{}
	// Sorted, so that values of one header written in several cases are
	// joined in the same order every time.
	for _, name := range slices.Sorted(maps.Keys(r.Headers)) {
		k, v := strings.ToLower(name), r.Headers[name]
		if old, ok := headers[k]; ok {
			v = old.(string) + "," + v
		}
		headers[k] = v
	}
	act := map[string]any{
		"origin.ip":       ip.String(),
		"origin.user_ip":  userIP(p, r, headers, ip),
		"request.headers": headers,
		"request.method":  or(r.Method, "GET"),
		"request.path":    or(r.Path, "/"),
		"request.query":   strings.TrimPrefix(r.Query, "?"),
		"request.scheme":  or(r.Scheme, "https"),
		"request.cookies": cookies(headers),
		"request.body":    types.NewUnknown(idBody, nil),
		"request.params":  types.NewUnknown(idParams, nil),
		// The WAF reads the request only when a rule calls it.
		wafVar: &wafCall{r: r, ip: ip.String(), headers: headers},
	}
	unknownIfEmpty := func(name, v string, id int64) {
		if v == "" {
			act[name] = types.NewUnknown(id, nil)
		} else {
			act[name] = v
		}
	}
	unknownIfEmpty("origin.region_code", strings.ToUpper(r.RegionCode), idRegionCode)
	unknownIfEmpty("origin.tls_ja3_fingerprint", r.TLSJA3Fingerprint, idJA3)
	unknownIfEmpty("origin.tls_ja4_fingerprint", r.TLSJA4Fingerprint, idJA4)
	if r.ASN != nil {
		act["origin.asn"] = *r.ASN
	} else {
		act["origin.asn"] = types.NewUnknown(idASN, nil)
	}
	for _, t := range tokenAttributes {
		act[t] = types.NewUnknown(idToken, nil)
	}
	return act, ip, nil
}

// userIP is origin.user_ip: the request's UserIP, else the first header of
// userIpRequestHeaders that holds an address, else origin.ip.
func userIP(p Policy, r Request, headers map[string]any, ip netip.Addr) string {
	if r.UserIP != "" {
		return r.UserIP
	}
	for _, h := range p.UserIPHeaders {
		if v, ok := headers[strings.ToLower(h)].(string); ok {
			first, _, _ := strings.Cut(v, ",")
			if a, err := netip.ParseAddr(strings.TrimSpace(first)); err == nil {
				return a.Unmap().String()
			}
		}
	}
	return ip.String()
}

// cookies is request.cookies, from the Cookie header.
func cookies(headers map[string]any) map[string]any {
	out := map[string]any{}
	v, _ := headers["cookie"].(string)
	for part := range strings.SplitSeq(v, ";") {
		k, val, ok := strings.Cut(strings.TrimSpace(part), "=")
		if ok && k != "" {
			out[k] = val
		}
	}
	return out
}

func or(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// DescribeRateLimit says what a rate-limited rule does, in one line.
func DescribeRateLimit(o *v1beta1.RateLimitOptions) string {
	if o == nil {
		return "no rateLimitOptions"
	}
	conform := "allow"
	if o.ConformAction != nil {
		conform = *o.ConformAction
	}
	exceed := "deny(429)"
	if o.ExceedAction != nil {
		exceed = *o.ExceedAction
	}
	if o.ExceedRedirectOptions != nil {
		exceed += " " + o.ExceedRedirectOptions.Type
		if o.ExceedRedirectOptions.Target != nil {
			exceed += " to " + *o.ExceedRedirectOptions.Target
		}
	}
	s := "conforming: " + conform
	if t := o.RateLimitThreshold; t != nil {
		s += fmt.Sprintf("; over %d per %ds per %s: %s", t.Count, t.IntervalSec, DescribeKey(o), exceed)
	}
	if b := o.BanThreshold; b != nil {
		s += fmt.Sprintf("; over %d per %ds: banned", b.Count, b.IntervalSec)
		if o.BanDurationSec != nil {
			s += fmt.Sprintf(" for %ds", *o.BanDurationSec)
		}
	}
	return s
}

// DescribeKey names the rate-limit key: "IP", "HTTP_HEADER x-api-key +
// HTTP_PATH".
func DescribeKey(o *v1beta1.RateLimitOptions) string {
	var parts []string
	for _, k := range o.EnforceOnKeyConfigs {
		s := k.EnforceOnKeyType
		if k.EnforceOnKeyName != nil {
			s += " " + *k.EnforceOnKeyName
		}
		parts = append(parts, s)
	}
	if len(parts) == 0 {
		s := "ALL"
		if o.EnforceOnKey != nil {
			s = *o.EnforceOnKey
		}
		if o.EnforceOnKeyName != nil {
			s += " " + *o.EnforceOnKeyName
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, " + ")
}
