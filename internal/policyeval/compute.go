package policyeval

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/ast"
	"github.com/google/cel-go/common/types"
	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// SourceGCP is the Source of a rule read from a policy as GCP holds it.
const SourceGCP = "gcp"

// FromCompute returns the policy GCP holds, as Evaluate reads it: every
// rule of sp (the default rule among them), and its userIpRequestHeaders.
// name names it in reports. A rule that does not decode is an error.
func FromCompute(name string, sp *compute.SecurityPolicy) (Policy, error) {
	out := Policy{Name: name}
	if sp == nil {
		return out, nil
	}
	if a := sp.AdvancedOptionsConfig; a != nil {
		out.UserIPHeaders = a.UserIpRequestHeaders
	}
	for _, r := range sp.Rules {
		if r == nil {
			continue
		}
		p, err := ruleParameters(r)
		if err != nil {
			return Policy{}, fmt.Errorf("rule %d: %w", r.Priority, err)
		}
		out.Rules = append(out.Rules, Rule{Priority: r.Priority, Source: SourceGCP, RuleParameters: p})
	}
	sort.SliceStable(out.Rules, func(i, j int) bool { return out.Rules[i].Priority < out.Rules[j].Priority })
	return out, nil
}

// ruleParameters decodes a compute rule into RuleParameters. Their JSON
// names are compute v1's (see rule_types.go), so one round trip converts
// every field, the ones added later included; priority, kind and the
// output-only fields have no counterpart and are dropped.
func ruleParameters(r *compute.SecurityPolicyRule) (v1beta1.RuleParameters, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return v1beta1.RuleParameters{}, err
	}
	var p v1beta1.RuleParameters
	if err := json.Unmarshal(b, &p); err != nil {
		return v1beta1.RuleParameters{}, err
	}
	return p, nil
}

// parseEnv parses expressions for AddressGroupNames: parsing needs no
// declarations.
var parseEnv = sync.OnceValues(func() (*cel.Env, error) { return cel.NewEnv() })

// AddressGroupNames returns the names the rules of p give
// evaluateAddressGroup and evaluateOrganizationAddressGroup as string
// literals, each once, in rule order: the groups to give New for p. An
// expression that does not parse names none (Evaluate reports it).
func AddressGroupNames(p Policy) (project, org []string) {
	env, err := parseEnv()
	if err != nil {
		return nil, nil
	}
	for _, r := range p.Rules {
		if r.Match == nil || r.Match.Expr == nil {
			continue
		}
		parsed, iss := env.Parse(r.Match.Expr.Expression)
		if iss.Err() != nil {
			continue
		}
		ast.PreOrderVisit(parsed.NativeRep().Expr(), ast.NewExprVisitor(func(e ast.Expr) {
			if e.Kind() != ast.CallKind {
				return
			}
			call := e.AsCall()
			switch call.FunctionName() {
			case "evaluateAddressGroup":
				project = appendName(project, call)
			case "evaluateOrganizationAddressGroup":
				org = appendName(org, call)
			}
		}))
	}
	return project, org
}

// appendName appends the call's first argument when it is a string
// literal not in names yet.
func appendName(names []string, call ast.CallExpr) []string {
	args := call.Args()
	if len(args) == 0 || args[0].Kind() != ast.LiteralKind {
		return names
	}
	s, ok := args[0].AsLiteral().(types.String)
	if !ok || slices.Contains(names, string(s)) {
		return names
	}
	return append(names, string(s))
}
