package testcmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/policyeval"
	"github.com/armorplane/provider-cloudarmor/internal/validatecmd"
)

// Exit statuses.
const (
	ExitPass  = 0
	ExitFail  = 1
	ExitUsage = 2
)

// Config is the command line of `test`.
type Config struct {
	// Manifests are manifest files or directories (--filename).
	Manifests []string
	// Cases is the cases file (--cases).
	Cases string
	// Explain says for every rule why it matched or not.
	Explain bool
	// Live names a policy in GCP (--live):
	// projects/P/global/securityPolicies/NAME or
	// projects/P/regions/R/securityPolicies/NAME. The cases run against it
	// as GCP holds it, with the address groups its rules name, instead of
	// against manifests.
	Live string
	// Endpoint and Credentials reach GCP for Live, as the validate
	// command's do.
	Endpoint string
	validatecmd.Credentials
	// Timeout bounds the reads from GCP; 0 means none.
	Timeout time.Duration
}

// Run is RunContext without a context: offline, it needs none.
func Run(cfg Config, out, errOut io.Writer) int {
	return RunContext(context.Background(), cfg, out, errOut)
}

// RunContext runs the cases of cfg and writes the report to out, problems
// with the input to errOut. ctx bounds what --live reads from GCP. It
// returns the exit status.
func RunContext(ctx context.Context, cfg Config, out, errOut io.Writer) int {
	p, cases, notes, err := load(ctx, cfg)
	if err != nil {
		fmt.Fprintf(errOut, "error: %v\n", err)
		return ExitUsage
	}
	e, policy := p.evaluator, p.policy
	for _, n := range notes {
		fmt.Fprintf(out, "note: %s\n", n)
	}
	passed, failed := 0, 0
	for _, c := range cases.Cases {
		v, err := e.Evaluate(policy, request(c.Request))
		if err != nil {
			// readCases checked the request; this is a bug, not a failure.
			fmt.Fprintf(errOut, "error: %s: case %q: %v\n", cfg.Cases, c.Name, err)
			return ExitUsage
		}
		problem := check(c.Expect, v)
		if problem == "" {
			passed++
			fmt.Fprintf(out, "PASS %s: %s\n", c.Name, v.Summary())
		} else {
			failed++
			fmt.Fprintf(out, "FAIL %s: %s\n", c.Name, problem)
		}
		if cfg.Explain || problem != "" {
			for _, w := range v.Warnings {
				fmt.Fprintf(out, "     note: %s\n", w)
			}
		}
		if cfg.Explain {
			explain(out, v)
		}
	}
	for _, st := range cases.Streams {
		ok, err := runStream(out, e.NewStream(policy), st, cfg.Explain)
		if err != nil {
			fmt.Fprintf(errOut, "error: %s: stream %q: %v\n", cfg.Cases, st.Name, err)
			return ExitUsage
		}
		passed += ok
		failed += len(st.Steps) - ok
	}
	fmt.Fprintf(out, "%d passed, %d failed\n", passed, failed)
	if failed > 0 {
		return ExitFail
	}
	return ExitPass
}

type loaded struct {
	evaluator *policyeval.Evaluator
	policy    policyeval.Policy
}

// load reads the cases and builds the policy under test: from the
// manifests, or with --live from GCP.
func load(ctx context.Context, cfg Config) (loaded, *CasesFile, []string, error) {
	if cfg.Cases == "" {
		return loaded{}, nil, nil, fmt.Errorf("--cases: required")
	}
	live := cfg.Live != ""
	if live && len(cfg.Manifests) > 0 {
		return loaded{}, nil, nil, fmt.Errorf("--live and --filename exclude each other: --live reads the policy from GCP")
	}
	cases, err := readCases(cfg.Cases, !live)
	if err != nil {
		return loaded{}, nil, nil, err
	}
	var l loaded
	var notes []string
	if live {
		l, notes, err = loadLive(ctx, cfg)
	} else {
		l, notes, err = fromManifests(cfg, cases)
	}
	return l, cases, notes, err
}

// fromManifests builds the policy the cases file names from the manifests.
func fromManifests(cfg Config, cases *CasesFile) (loaded, []string, error) {
	if len(cfg.Manifests)+len(cases.Manifests) == 0 {
		return loaded{}, nil, fmt.Errorf("no manifests: give --filename, or list them under manifests in %s", cfg.Cases)
	}
	files, err := manifestFiles(cfg.Manifests)
	if err != nil {
		return loaded{}, nil, fmt.Errorf("--filename: %w", err)
	}
	for i, m := range cases.Manifests {
		fs, err := manifestFiles([]string{m})
		if err != nil {
			return loaded{}, nil, fmt.Errorf("%s: manifests[%d]: %w", cfg.Cases, i, err)
		}
		files = append(files, fs...)
	}
	m, err := readManifests(files)
	if err != nil {
		return loaded{}, nil, err
	}
	ns, name, ok := strings.Cut(cases.Policy, "/")
	if !ok {
		ns, name = "default", cases.Policy
	}
	var target *placed[*v1beta1.SecurityPolicy]
	for i, p := range m.policies {
		if p.obj.Namespace == ns && p.obj.Name == name {
			target = &m.policies[i]
		}
	}
	if target == nil {
		return loaded{}, nil, fmt.Errorf("%s: policy: no SecurityPolicy %s/%s among the manifests (%s)", cfg.Cases, ns, name, strings.Join(files, ", "))
	}
	var notes []string
	var objects []policyeval.RuleObject
	for _, r := range m.rules {
		p := r.obj.Spec.ForProvider
		id := r.obj.Namespace + "/" + r.obj.Name
		switch {
		case p.SecurityPolicyRef != nil:
			if r.obj.Namespace != ns || p.SecurityPolicyRef.Name != name {
				continue
			}
		case p.SecurityPolicy != nil:
			if *p.SecurityPolicy != externalName(target.obj) || !sameString(p.Region, target.obj.Spec.ForProvider.Region) {
				continue
			}
		default:
			notes = append(notes, fmt.Sprintf("%s: SecurityPolicyRule %s: a securityPolicySelector cannot be resolved offline; the rule is left out", r.where, id))
			continue
		}
		objects = append(objects, policyeval.RuleObject{Name: id, Priority: p.Priority, RuleParameters: p.RuleParameters})
	}
	var groups []policyeval.AddressGroup
	for _, g := range m.groups {
		p := g.obj.Spec.ForProvider
		groups = append(groups, policyeval.AddressGroup{Name: externalName(g.obj), Organization: p.Organization != nil, Items: p.Items})
	}
	e, err := policyeval.New(groups...)
	if err != nil {
		return loaded{}, nil, err
	}
	policy := policyeval.Merge(ns+"/"+name, target.obj.Spec.ForProvider, objects)
	notes = append(notes, policy.Ignored...)
	return loaded{evaluator: e, policy: policy}, notes, nil
}

func sameString(a, b *string) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

func request(r Request) policyeval.Request {
	return policyeval.Request{
		IP: r.IP, UserIP: r.UserIP, RegionCode: r.RegionCode, ASN: r.ASN,
		TLSJA3Fingerprint: r.TLSJA3Fingerprint, TLSJA4Fingerprint: r.TLSJA4Fingerprint,
		Method: r.Method, Path: r.Path, Query: r.Query, Scheme: r.Scheme, Headers: r.Headers,
	}
}

// runStream runs the steps of a stream, one PASS or FAIL line per step, and
// returns how many passed.
func runStream(out io.Writer, s *policyeval.Stream, st Stream, explainAll bool) (int, error) {
	passed := 0
	var at time.Duration
	for i, step := range st.Steps {
		if step.At != nil {
			at = step.At.Duration
		}
		n := max(step.Repeat, 1)
		var every time.Duration
		if step.Every != nil {
			every = step.Every.Duration
		}
		label := fmt.Sprintf("%s: requests[%d]", st.Name, i)
		if step.Name != "" {
			label += " " + step.Name
		}
		label += fmt.Sprintf(" (at %s", at)
		if n > 1 {
			label += fmt.Sprintf(", %d every %s", n, every)
		}
		label += ")"
		var last policyeval.Verdict
		problem := ""
		for j := range n {
			if j > 0 {
				at += every
			}
			v, err := s.Evaluate(at, request(step.Request))
			if err != nil {
				return passed, err
			}
			last = v
			if p := check(step.Expect, v); p != "" {
				problem = fmt.Sprintf("request %d of %d at %s: %s", j+1, n, at, p)
				break
			}
		}
		if problem == "" {
			passed++
			fmt.Fprintf(out, "PASS %s: %s\n", label, last.Summary())
		} else {
			fmt.Fprintf(out, "FAIL %s: %s\n", label, problem)
		}
		if explainAll {
			explain(out, last)
		}
	}
	return passed, nil
}

// check compares a verdict with what a case expects; "" when it passes.
func check(e Expect, v policyeval.Verdict) string {
	var want []string
	ok := true
	if e.NotEvaluable {
		want = append(want, "not evaluable offline")
		ok = v.NotEvaluable != ""
	}
	if e.Action != "" {
		want = append(want, e.Action)
		ok = ok && v.NotEvaluable == "" && v.Action == e.Action
	}
	if e.Priority != nil {
		want = append(want, fmt.Sprintf("at priority %d", *e.Priority))
		ok = ok && v.Priority == *e.Priority
	}
	if e.RedirectTarget != "" {
		want = append(want, "to "+e.RedirectTarget)
		ok = ok && v.Redirect != nil && v.Redirect.Target != nil && *v.Redirect.Target == e.RedirectTarget
	}
	if e.Preview != nil {
		got := int64(-1)
		if v.Preview != nil {
			got = v.Preview.Priority
		}
		if *e.Preview == -1 {
			want = append(want, "with no preview rule matching")
		} else {
			want = append(want, fmt.Sprintf("with preview rule %d matching", *e.Preview))
		}
		ok = ok && got == *e.Preview
	}
	if e.Effective != "" {
		want = append(want, "then "+e.Effective)
		ok = ok && v.Effective == e.Effective
	}
	if e.Banned != nil {
		if *e.Banned {
			want = append(want, "banned")
		} else {
			want = append(want, "not banned")
		}
		ok = ok && v.Banned == *e.Banned
	}
	if ok {
		return ""
	}
	return fmt.Sprintf("want %s, got %s", strings.Join(want, " "), v.Summary())
}

// explain writes one line per rule: priority, action, outcome and why.
func explain(out io.Writer, v policyeval.Verdict) {
	for _, t := range v.Trace {
		action := t.Action
		if t.Preview {
			action += " (preview)"
		}
		fmt.Fprintf(out, "     %10d %-20s %-13s %s [%s]\n", t.Priority, action, t.Outcome, t.Why, t.Source)
	}
}
