package validatecmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
)

// Exit statuses of Run.
const (
	// ExitOK: GCP would accept every manifest.
	ExitOK = 0
	// ExitRefused: GCP would refuse at least one manifest.
	ExitRefused = 1
	// ExitUsage: the command could not ask: bad options or manifests,
	// unusable credentials, or GCP not answering the question.
	ExitUsage = 2
)

// Config is what the validate command was asked to do.
type Config struct {
	// Files are the manifest files, read in order.
	Files []string
	// Project is the GCP project of objects whose spec.forProvider.project
	// is unset, like a ProviderConfig's projectID.
	Project string
	// Endpoint overrides the compute API base URL, like a ProviderConfig's
	// endpoint.
	Endpoint string
	Credentials
	// Timeout bounds the whole run; 0 means none.
	Timeout time.Duration
}

// A target is the GCP policy an object writes to.
type target struct {
	project, region, policy string
}

// Run validates the manifests of cfg.Files with GCP and writes one line per
// document to out: "FILE:DOC: Kind/name: ok", "...: GCP refuses: <GCP's
// message>", "...: the provider would not write it: <why>", "...: skipped:
// <why>", or "...: cannot ask GCP: <error>". Errors
// that stop it before GCP is asked go to errOut. It returns the exit status.
func Run(ctx context.Context, cfg Config, out, errOut io.Writer) int {
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	if len(cfg.Files) == 0 {
		fmt.Fprintln(errOut, "validate: no manifests: give at least one -f FILE") //nolint:errcheck // best effort
		return ExitUsage
	}
	creds, err := cfg.GCPCredentials(cfg.Endpoint)
	if err != nil {
		fmt.Fprintf(errOut, "validate: %v\n", err) //nolint:errcheck // best effort
		return ExitUsage
	}
	docs, err := readFiles(cfg.Files)
	if err != nil {
		fmt.Fprintf(errOut, "validate: %v\n", err) //nolint:errcheck // best effort
		return ExitUsage
	}
	plan, err := planChecks(docs, cfg.Project)
	if err != nil {
		fmt.Fprintf(errOut, "validate: %v\n", err) //nolint:errcheck // best effort
		return ExitUsage
	}
	client, err := gcp.NewClientForCredentials(ctx, creds, nil, nil)
	if err != nil {
		fmt.Fprintf(errOut, "validate: %v\n", err) //nolint:errcheck // best effort
		return ExitUsage
	}
	status := ExitOK
	for _, c := range plan {
		line, s := c.run(ctx, client)
		fmt.Fprintln(out, c.doc.where()+" "+line) //nolint:errcheck // best effort
		status = max(status, s)
	}
	return status
}

// A check is what to ask GCP about one document.
type check struct {
	doc  document
	to   target
	skip string // why the document is not asked about, if it is not
	// For a policy: who owns which priorities. For a rule: the insert
	// body of its policy when that is among the manifests, in case GCP
	// does not have the policy yet.
	own     gcppolicy.Ownership
	pending *compute.SecurityPolicy
}

// planChecks resolves every document's target before GCP is asked
// anything, so that bad input stops the run before the first request.
func planChecks(docs []document, project string) ([]check, error) {
	policies := map[string]document{} // by namespace/name, for securityPolicyRef
	for _, d := range docs {
		if d.policy != nil {
			policies[d.policy.Namespace+"/"+d.policy.Name] = d
		}
	}
	var checks []check
	var problems []string
	claims := map[target]gcppolicy.Claims{}
	for _, d := range docs {
		c := check{doc: d}
		switch {
		case d.policy != nil:
			p := d.policy.Spec.ForProvider
			c.to = target{project: or(p.Project, project), region: or(p.Region, ""), policy: externalName(d.policy)}
		case d.rule != nil:
			r := d.rule.Spec.ForProvider
			c.to = target{project: or(r.Project, project), region: or(r.Region, "")}
			switch {
			case r.SecurityPolicy != nil:
				c.to.policy = *r.SecurityPolicy
			case r.SecurityPolicyRef != nil:
				if pd, ok := policies[d.rule.Namespace+"/"+r.SecurityPolicyRef.Name]; ok {
					c.to.policy = externalName(pd.policy)
				} else {
					c.skip = "securityPolicyRef names SecurityPolicy " + r.SecurityPolicyRef.Name + ", which is not among the manifests"
				}
			default:
				c.skip = "a securityPolicySelector cannot be resolved from manifests: set securityPolicy or securityPolicyRef"
			}
			if c.skip == "" {
				if claims[c.to] == nil {
					claims[c.to] = gcppolicy.Claims{}
				}
				claims[c.to][r.Priority] = d.rule.Namespace + "/" + d.rule.Name
			}
		default:
			c.skip = "not a SecurityPolicy or SecurityPolicyRule"
		}
		if c.skip == "" && !writes(d) {
			c.skip = "its managementPolicies let the provider write nothing"
		}
		if c.skip == "" && c.to.project == "" {
			problems = append(problems, d.where()+" no GCP project: set spec.forProvider.project or --project")
		}
		checks = append(checks, c)
	}
	if len(problems) > 0 {
		return nil, errors.New(strings.Join(problems, "\n"))
	}
	pending := map[target]*compute.SecurityPolicy{}
	for i, c := range checks {
		if c.doc.policy != nil {
			checks[i].own = gcppolicy.Ownership{Claims: claims[c.to]}
			pending[c.to] = gcppolicy.InsertBody(c.to.policy, c.doc.policy.Spec.ForProvider, checks[i].own)
		}
	}
	for i, c := range checks {
		if c.doc.rule != nil && c.skip == "" {
			checks[i].pending = pending[c.to]
		}
	}
	return checks, nil
}

// run asks GCP and returns the finding and its exit status.
func (c check) run(ctx context.Context, client *gcp.Client) (string, int) {
	if c.skip != "" {
		return "skipped: " + c.skip, ExitOK
	}
	v := client.Validator(c.to.project, c.to.region)
	var unchecked []string
	var err error
	if c.doc.policy != nil {
		unchecked, err = gcppolicy.ValidatePolicy(ctx, v, c.to.policy, c.doc.policy.Spec.ForProvider, c.own)
	} else {
		r := c.doc.rule.Spec.ForProvider
		err = gcppolicy.ValidateRule(ctx, v, c.to.policy, r.Priority, r.RuleParameters, c.pending)
	}
	var refusal *gcppolicy.Refusal
	var unwritable *gcppolicy.Unwritable
	switch {
	case errors.As(err, &refusal):
		return "GCP refuses: " + gcpMessage(refusal.Err) + " (" + refusal.Call + ")", ExitRefused
	case errors.As(err, &unwritable):
		return "the provider would not write it: " + flat(unwritable.Reason), ExitRefused
	case err != nil:
		return "cannot ask GCP: " + oneLine(err), ExitUsage
	case len(unchecked) > 0:
		return "ok; not asked: " + strings.Join(unchecked, "; "), ExitOK
	}
	return "ok", ExitOK
}

// gcpMessage is GCP's own message, without the client's "googleapi: Error
// 400:" framing, on one line.
func gcpMessage(err error) string {
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Message != "" {
		return flat(ge.Message)
	}
	return flat(err.Error())
}

// oneLine is an error that is not GCP's answer to the question, on one
// line: GCP's HTTP status and message, or the error.
func oneLine(err error) string {
	var ge *googleapi.Error
	if errors.As(err, &ge) && ge.Message != "" {
		return strconv.Itoa(ge.Code) + " " + flat(ge.Message)
	}
	return flat(err.Error())
}

func flat(s string) string { return strings.Join(strings.Fields(s), " ") }

// writes reports whether the provider may create or update the document's
// object in GCP: only then is there a write to ask about.
func writes(d document) bool {
	var mp xpv2.ManagementPolicies
	if d.policy != nil {
		mp = d.policy.GetManagementPolicies()
	} else {
		mp = d.rule.GetManagementPolicies()
	}
	if len(mp) == 0 {
		return true // the default, "*"
	}
	return slices.ContainsFunc(mp, func(a xpv2.ManagementAction) bool {
		return a == xpv2.ManagementActionAll || a == xpv2.ManagementActionCreate || a == xpv2.ManagementActionUpdate
	})
}

func or(s *string, fallback string) string {
	if s != nil && *s != "" {
		return *s
	}
	return fallback
}

func itoa(i int) string { return strconv.Itoa(i) }
