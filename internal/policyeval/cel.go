package policyeval

import (
	"encoding/base64"
	"fmt"
	"net/netip"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/operators"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

// Ids of the unknown values that stand for what cannot be known offline.
// CEL merges the ids of the unknowns an outcome depends on, so the verdict
// names exactly those. They are negative: CEL's own expression ids are not.
const (
	idRegionCode int64 = -1 - iota
	idASN
	idJA3
	idJA4
	idToken
	idBody
	idParams
	idWaf
	idPreconfiguredExpr
	idThreatIntel
	idAdaptive
	idAddressGroup
	idOrgAddressGroup
	idWafBody
)

// unknownWhat says what each unknown id stands for, in a verdict.
var unknownWhat = map[int64]string{
	idRegionCode:        "origin.region_code (give regionCode in the request)",
	idASN:               "origin.asn (give asn in the request)",
	idJA3:               "origin.tls_ja3_fingerprint (give tlsJa3Fingerprint in the request)",
	idJA4:               "origin.tls_ja4_fingerprint (give tlsJa4Fingerprint in the request)",
	idToken:             "reCAPTCHA tokens (token.*)",
	idBody:              "request.body",
	idParams:            "request.params",
	idWaf:               "preconfigured WAF rules (evaluatePreconfiguredWaf)",
	idPreconfiguredExpr: "preconfigured rules (evaluatePreconfiguredExpr)",
	idWafBody:           "request.body, which WAF signatures inspect (the request has a Content-Length or Transfer-Encoding)",
	idThreatIntel:       "threat intelligence (evaluateThreatIntelligence)",
	idAdaptive:          "Adaptive Protection (evaluateAdaptiveProtectionAutoDeploy)",
	idAddressGroup:      "an address group that is not among the inputs (evaluateAddressGroup)",
	idOrgAddressGroup:   "an organization address group that is not among the inputs (evaluateOrganizationAddressGroup)",
}

// Attribute names of the rules language.
var (
	tokenAttributes = []string{
		"token.recaptcha_exemption.valid", "token.recaptcha_action.score", "token.recaptcha_action.captcha_status",
		"token.recaptcha_action.action", "token.recaptcha_action.valid", "token.recaptcha_session.score",
		"token.recaptcha_session.valid",
	}
)

// newEnv returns the Cloud Armor rules language as a CEL environment, with
// the functions bound: the attribute and function declarations follow the
// rules language reference (and the emulator's checking environment in
// internal/emulator/securitypolicies, which declares the same names).
// lookup resolves address groups.
func newEnv(lookup func(org bool, name, ip string) ref.Val) (*cel.Env, error) {
	str, boolean := cel.StringType, cel.BoolType
	strMap := cel.MapType(cel.StringType, cel.DynType)
	unknown := func(id int64) func(...ref.Val) ref.Val {
		return func(...ref.Val) ref.Val { return types.NewUnknown(id, nil) }
	}
	opts := []cel.EnvOption{
		cel.CrossTypeNumericComparisons(true),
		// Cloud Armor has has() and no other macro.
		cel.ClearMacros(),
		cel.Macros(HasMacro, wafMacro("evaluatePreconfiguredWaf", 1), wafMacro("evaluatePreconfiguredWaf", 2),
			wafMacro("evaluatePreconfiguredExpr", 1), wafMacro("evaluatePreconfiguredExpr", 2)),
		cel.Function("inIpRange", cel.Overload("inIpRange_string_string", []*cel.Type{str, str}, boolean,
			cel.BinaryBinding(inIPRange))),
		cel.Variable(wafVar, cel.DynType),
		cel.Function("evaluatePreconfiguredWaf",
			cel.Overload("evaluatePreconfiguredWaf_waf_string", []*cel.Type{cel.DynType, str}, boolean, cel.FunctionBinding(evaluateWaf)),
			cel.Overload("evaluatePreconfiguredWaf_waf_string_map", []*cel.Type{cel.DynType, str, strMap}, boolean, cel.FunctionBinding(evaluateWaf))),
		cel.Function("evaluatePreconfiguredExpr",
			cel.Overload("evaluatePreconfiguredExpr_waf_string", []*cel.Type{cel.DynType, str}, boolean, cel.FunctionBinding(evaluateExpr)),
			cel.Overload("evaluatePreconfiguredExpr_waf_string_list", []*cel.Type{cel.DynType, str, cel.ListType(str)}, boolean, cel.FunctionBinding(evaluateExpr))),
		cel.Function("evaluateThreatIntelligence",
			cel.Overload("evaluateThreatIntelligence_string", []*cel.Type{str}, boolean, cel.FunctionBinding(unknown(idThreatIntel))),
			cel.Overload("evaluateThreatIntelligence_string_list", []*cel.Type{str, cel.ListType(str)}, boolean, cel.FunctionBinding(unknown(idThreatIntel)))),
		cel.Function("evaluateAddressGroup", cel.Overload("evaluateAddressGroup_string_string", []*cel.Type{str, str}, boolean,
			cel.BinaryBinding(func(n, ip ref.Val) ref.Val { return lookup(false, string(n.(types.String)), string(ip.(types.String))) }))),
		cel.Function("evaluateOrganizationAddressGroup", cel.Overload("evaluateOrganizationAddressGroup_string_string", []*cel.Type{str, str}, boolean,
			cel.BinaryBinding(func(n, ip ref.Val) ref.Val { return lookup(true, string(n.(types.String)), string(ip.(types.String))) }))),
		cel.Function("evaluateAdaptiveProtectionAutoDeploy",
			cel.Overload("evaluateAdaptiveProtectionAutoDeploy", nil, boolean, cel.FunctionBinding(unknown(idAdaptive)))),
	}
	for name, f := range map[string]func(string) (string, error){
		"lower":        func(s string) (string, error) { return strings.ToLower(s), nil },
		"upper":        func(s string) (string, error) { return strings.ToUpper(s), nil },
		"base64Decode": base64Decode, "urlDecode": func(s string) (string, error) { return urlDecode(s, false), nil },
		"urlDecodeUni":  func(s string) (string, error) { return urlDecode(s, true), nil },
		"utf8ToUnicode": func(s string) (string, error) { return utf8ToUnicode(s), nil },
	} {
		opts = append(opts, cel.Function(name, cel.MemberOverload("string_"+name, []*cel.Type{str}, str,
			cel.UnaryBinding(func(v ref.Val) ref.Val {
				s, ok := v.(types.String)
				if !ok {
					return types.NoSuchOverloadErr()
				}
				out, err := f(string(s))
				if err != nil {
					return types.NewErr("%s: %v", name, err)
				}
				return types.String(out)
			}))))
	}
	for name, t := range map[string]*cel.Type{
		"origin.ip": str, "origin.user_ip": str, "origin.region_code": str, "origin.asn": cel.IntType,
		"origin.tls_ja3_fingerprint": str, "origin.tls_ja4_fingerprint": str,
		"request.headers": strMap, "request.method": str, "request.path": str, "request.query": str,
		"request.scheme": str, "request.cookies": strMap, "request.body": str, "request.params": strMap,
		"token.recaptcha_exemption.valid": boolean,
		"token.recaptcha_action.score":    cel.DoubleType, "token.recaptcha_action.captcha_status": str,
		"token.recaptcha_action.action": str, "token.recaptcha_action.valid": boolean,
		"token.recaptcha_session.score": cel.DoubleType, "token.recaptcha_session.valid": boolean,
	} {
		opts = append(opts, cel.Variable(name, t))
	}
	return cel.NewEnv(opts...)
}

// HasMacro is Cloud Armor's has(), the only macro its rules language has:
// a presence test on a field, has(a.b), or on a map key,
// has(request.headers['user-agent']). The emulator's checker uses it too.
var HasMacro = cel.GlobalMacro("has", 1, hasMacro)

func hasMacro(eh cel.MacroExprFactory, _ ast.Expr, args []ast.Expr) (ast.Expr, *cel.Error) {
	arg := args[0]
	switch arg.Kind() {
	case ast.SelectKind:
		s := arg.AsSelect()
		return eh.NewPresenceTest(s.Operand(), s.FieldName()), nil
	case ast.CallKind:
		c := arg.AsCall()
		if c.FunctionName() == operators.Index && len(c.Args()) == 2 && c.Args()[1].Kind() == ast.LiteralKind {
			if key, ok := c.Args()[1].AsLiteral().(types.String); ok {
				return eh.NewPresenceTest(c.Args()[0], string(key)), nil
			}
		}
	}
	return nil, eh.NewError(arg.ID(), "invalid argument to has() macro")
}

// wafMacro passes the request to a WAF function: name(args) becomes
// name(@waf, args), which the overloads above take.
func wafMacro(name string, argc int) cel.Macro {
	return cel.GlobalMacro(name, argc, func(eh cel.MacroExprFactory, _ ast.Expr, args []ast.Expr) (ast.Expr, *cel.Error) {
		return eh.NewCall(name, append([]ast.Expr{eh.NewIdent(wafVar)}, args...)...), nil
	})
}

// evaluateWaf is evaluatePreconfiguredWaf(@waf, set[, options]).
func evaluateWaf(args ...ref.Val) ref.Val {
	c, set, ok := wafArgs(args)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	o := wafOptions{sensitivity: maxSensitivity}
	if len(args) == 3 {
		var err error
		if o, err = wafOptionsOf(args[2]); err != nil {
			return types.NewErr("evaluatePreconfiguredWaf: %v", err)
		}
	}
	return c.evaluate(set, o, idWaf)
}

// evaluateExpr is evaluatePreconfiguredExpr(@waf, set[, opt-out ids]):
// every signature of the set, less the ones listed.
func evaluateExpr(args ...ref.Val) ref.Val {
	c, set, ok := wafArgs(args)
	if !ok {
		return types.NoSuchOverloadErr()
	}
	o := wafOptions{sensitivity: maxSensitivity}
	if len(args) == 3 {
		var err error
		if o.optOut, err = stringsOf(args[2]); err != nil {
			return types.NewErr("evaluatePreconfiguredExpr: %v", err)
		}
	}
	return c.evaluate(set, o, idPreconfiguredExpr)
}

func wafArgs(args []ref.Val) (*wafCall, string, bool) {
	if len(args) < 2 {
		return nil, "", false
	}
	c, ok1 := args[0].(*wafCall)
	set, ok2 := args[1].(types.String)
	return c, string(set), ok1 && ok2
}

// inIPRange is inIpRange(ip, range): whether ip is in range, a CIDR or a
// single address, IPv4 or IPv6. An address that is not one is an error.
func inIPRange(ipv, rangev ref.Val) ref.Val {
	ip, ok1 := ipv.(types.String)
	rng, ok2 := rangev.(types.String)
	if !ok1 || !ok2 {
		return types.NoSuchOverloadErr()
	}
	a, err := netip.ParseAddr(string(ip))
	if err != nil {
		return types.NewErr("inIpRange: %q is not an IP address", string(ip))
	}
	p, err := parseRange(string(rng))
	if err != nil {
		return types.NewErr("inIpRange: %v", err)
	}
	return types.Bool(p.Contains(a.Unmap()))
}

// parseRange parses a CIDR or a single address. Host bits are ignored, as
// GCP canonicalises 10.1.2.3/8 to 10.0.0.0/8.
func parseRange(s string) (netip.Prefix, error) {
	s = strings.TrimSpace(s)
	if !strings.Contains(s, "/") {
		// A single address, as the provider reads one in srcIpRanges.
		return iprange.Parse(s)
	}
	// Unlike iprange.Parse, a CIDR with host bits is accepted, masked.
	p, err := netip.ParsePrefix(s)
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("%q is not a valid CIDR", s)
	}
	if p.Addr().Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
	}
	return p.Masked(), nil
}

// base64Decode decodes standard base64, padded or not; URL-safe base64 is
// accepted too. Anything else is an error (the expression then does not
// match).
func base64Decode(s string) (string, error) {
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return string(b), nil
		}
	}
	return "", fmt.Errorf("not base64")
}

// urlDecode decodes %XX escapes and + as a space; an escape that is not one
// is kept as written. With uni, %uXXXX escapes are decoded too, as UTF-8.
func urlDecode(s string, uni bool) string {
	if !strings.ContainsAny(s, "%+") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '+':
			b.WriteByte(' ')
		case c == '%' && uni && i+5 < len(s) && (s[i+1] == 'u' || s[i+1] == 'U'):
			if n, err := strconv.ParseUint(s[i+2:i+6], 16, 32); err == nil {
				b.WriteRune(rune(n))
				i += 5
			} else {
				b.WriteByte(c)
			}
		case c == '%' && i+2 < len(s):
			if n, err := strconv.ParseUint(s[i+1:i+3], 16, 8); err == nil {
				b.WriteByte(byte(n))
				i += 2
			} else {
				b.WriteByte(c)
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// utf8ToUnicode writes every non-ASCII character of s as %uXXXX (ModSecurity's
// utf8toUnicode transformation, from which Cloud Armor's function takes its
// name); invalid UTF-8 bytes are kept.
func utf8ToUnicode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			b.WriteByte(s[i])
		case r < utf8.RuneSelf:
			b.WriteRune(r)
		default:
			fmt.Fprintf(&b, "%%u%04x", r)
		}
		i += n
	}
	return b.String()
}
