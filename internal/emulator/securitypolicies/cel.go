package securitypolicies

import (
	"fmt"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/policyeval"
)

// Limits of a match expression. "An advanced match condition contains an
// expression with up to five subexpressions" (Cloud Armor custom rules
// language reference); 2048 characters is chosen (the provider's CRD uses it).
const (
	maxExprChars      = 2048
	maxSubexpressions = 5
)

// An exprCheck is what checking an expression found, independent of the
// policy it is in; the policy-dependent checks use the flags.
type exprCheck struct {
	problem      string // why GCP would refuse the expression; "" if it would not
	threatIntel  bool   // calls evaluateThreatIntelligence
	sourceIPList bool   // calls evaluatePreconfiguredExpr('sourceiplist-…')

	addressGroups bool     // calls evaluateAddressGroup or evaluateOrganizationAddressGroup
	groups        []string // the project groups it names (string literals)
	orgGroups     []string // the organization groups it names
}

// celEnv is the Cloud Armor rules language as a CEL environment. The
// attributes and their types follow Google's own Cloud Armor environment
// (github.com/cel-expr/cloud-armor-rules, config cloud-armor-v1 and -v2) and
// the rules language reference. It is built on CEL's standard library, whose
// operators accept at least what Cloud Armor's narrower ones do, so the type
// check refuses an expression only where Cloud Armor would too, apart from
// names this list lacks.
var celEnv = sync.OnceValue(func() *cel.Env {
	str, boolean := cel.StringType, cel.BoolType
	strMap := cel.MapType(cel.StringType, cel.DynType)
	opts := []cel.EnvOption{
		// Lenient: Cloud Armor's environment compares only like numbers.
		cel.CrossTypeNumericComparisons(true),
		// Cloud Armor has only has(), and accepts has(m['key']) as well.
		cel.ClearMacros(),
		cel.Macros(policyeval.HasMacro),
		cel.Function("inIpRange", cel.Overload("inIpRange_string_string", []*cel.Type{str, str}, boolean)),
		cel.Function("evaluatePreconfiguredWaf",
			cel.Overload("evaluatePreconfiguredWaf_string", []*cel.Type{str}, boolean),
			cel.Overload("evaluatePreconfiguredWaf_string_map", []*cel.Type{str, strMap}, boolean)),
		cel.Function("evaluatePreconfiguredExpr",
			cel.Overload("evaluatePreconfiguredExpr_string", []*cel.Type{str}, boolean),
			cel.Overload("evaluatePreconfiguredExpr_string_list", []*cel.Type{str, cel.ListType(str)}, boolean)),
		cel.Function("evaluateThreatIntelligence",
			cel.Overload("evaluateThreatIntelligence_string", []*cel.Type{str}, boolean),
			cel.Overload("evaluateThreatIntelligence_string_list", []*cel.Type{str, cel.ListType(str)}, boolean)),
		cel.Function("evaluateAddressGroup", cel.Overload("evaluateAddressGroup_string_string", []*cel.Type{str, str}, boolean)),
		cel.Function("evaluateOrganizationAddressGroup",
			cel.Overload("evaluateOrganizationAddressGroup_string_string", []*cel.Type{str, str}, boolean)),
		cel.Function("evaluateAdaptiveProtectionAutoDeploy",
			cel.Overload("evaluateAdaptiveProtectionAutoDeploy", nil, boolean)),
	}
	for _, m := range []string{"lower", "upper", "base64Decode", "urlDecode", "urlDecodeUni", "utf8ToUnicode"} {
		opts = append(opts, cel.Function(m, cel.MemberOverload("string_"+m, []*cel.Type{str}, str)))
	}
	for name, t := range map[string]*cel.Type{
		"origin.ip": str, "origin.user_ip": str, "origin.region_code": str, "origin.asn": cel.IntType,
		"origin.tls_ja3_fingerprint": str, "origin.tls_ja4_fingerprint": str,
		"request.headers": strMap, "request.method": str, "request.path": str, "request.query": str,
		"request.scheme": str,
		// Not in Cloud Armor's current environment; accepted rather than
		// refuse what GCP may already take (request.body and request.params
		// are the environment's "next" version).
		"request.cookies": strMap, "request.body": str, "request.params": strMap,
		"token.recaptcha_exemption.valid": boolean,
		"token.recaptcha_action.score":    cel.DoubleType, "token.recaptcha_action.captcha_status": str,
		"token.recaptcha_action.action": str, "token.recaptcha_action.valid": boolean,
		"token.recaptcha_session.score": cel.DoubleType, "token.recaptcha_session.valid": boolean,
	} {
		opts = append(opts, cel.Variable(name, t))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		panic("emulator: Cloud Armor CEL environment: " + err.Error())
	}
	return env
})

// exprCache remembers checks by expression text: clients resend the same
// rules on every PATCH, and checking runs under the store's lock.
var exprCache = struct {
	sync.Mutex
	m map[string]exprCheck
}{m: map[string]exprCheck{}}

const exprCacheSize = 4096

// checkExpr checks an expression's length, syntax, names, types and
// subexpression count, and the rule sets it names.
func checkExpr(text string) exprCheck {
	exprCache.Lock()
	c, ok := exprCache.m[text]
	exprCache.Unlock()
	if ok {
		return c
	}
	c = compileExpr(text)
	exprCache.Lock()
	if len(exprCache.m) >= exprCacheSize {
		clear(exprCache.m)
	}
	exprCache.m[text] = c
	exprCache.Unlock()
	return c
}

func compileExpr(text string) exprCheck {
	if strings.TrimSpace(text) == "" {
		return exprCheck{problem: "An expression must be specified."}
	}
	if n := utf8.RuneCountInString(text); n > maxExprChars {
		return exprCheck{problem: fmt.Sprintf("The expression has %d characters; the limit is %d.", n, maxExprChars)}
	}
	checked, iss := celEnv().Compile(text)
	if iss.Err() != nil {
		e := iss.Errors()[0]
		return exprCheck{problem: fmt.Sprintf("The expression is not valid: %s (line %d, column %d).",
			e.Message, e.Location.Line(), e.Location.Column()+1)}
	}
	if t := checked.OutputType(); !t.IsExactType(cel.BoolType) && !t.IsExactType(cel.DynType) {
		return exprCheck{problem: fmt.Sprintf("The expression must evaluate to a boolean, not %s.", t)}
	}
	var c exprCheck
	logical := 0
	ast.PreOrderVisit(checked.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
		if e.Kind() != ast.CallKind || c.problem != "" {
			return
		}
		call := e.AsCall()
		switch call.FunctionName() {
		case operators.LogicalAnd, operators.LogicalOr:
			logical++
		case "evaluateThreatIntelligence":
			c.threatIntel = true
		case "evaluateAddressGroup":
			c.addressGroups = true
			c.groups = appendLiteral(c.groups, call)
		case "evaluateOrganizationAddressGroup":
			c.addressGroups = true
			c.orgGroups = appendLiteral(c.orgGroups, call)
		case "evaluatePreconfiguredWaf", "evaluatePreconfiguredExpr":
			c.problem = checkRuleSetArg(call, &c)
		}
	}))
	if c.problem == "" && logical+1 > maxSubexpressions {
		c.problem = fmt.Sprintf("The expression has %d subexpressions; the limit is %d.", logical+1, maxSubexpressions)
	}
	return c
}

// checkRuleSetArg checks the set a preconfigured-rules call names; it must be
// a literal, as in every documented example.
func checkRuleSetArg(call ast.CallExpr, c *exprCheck) string {
	fn := call.FunctionName()
	arg := call.Args()[0]
	var name string
	if arg.Kind() == ast.LiteralKind {
		if s, ok := arg.AsLiteral().(types.String); ok {
			name = string(s)
		}
	}
	switch {
	case fn == "evaluatePreconfiguredExpr" && strings.HasPrefix(name, "sourceiplist-"):
		c.sourceIPList = true
	case name == "":
		return fmt.Sprintf("The first argument of %s must be the name of a preconfigured rule set, as a string literal.", fn)
	case !wafRuleSets[name]:
		return fmt.Sprintf("%s: unknown preconfigured WAF rule set '%s'.", fn, name)
	}
	return ""
}

// appendLiteral appends the first argument of call if it is a string
// literal, the address group's name.
func appendLiteral(names []string, call ast.CallExpr) []string {
	if args := call.Args(); len(args) > 0 && args[0].Kind() == ast.LiteralKind {
		if s, ok := args[0].AsLiteral().(types.String); ok {
			return append(names, string(s))
		}
	}
	return names
}

// precheckExprs compiles the expressions of rules into the cache before a
// handler takes the store's lock: compiling a new expression takes about
// 50 µs, and validation inside the lock then finds it cached instead of
// holding up every other request meanwhile.
func precheckExprs(rules ...*compute.SecurityPolicyRule) {
	for _, r := range rules {
		if r != nil && r.Match != nil && r.Match.Expr != nil && r.Match.Expr.Expression != "" {
			checkExpr(r.Match.Expr.Expression)
		}
	}
}
