package testcmd

import (
	"context"
	"fmt"
	"regexp"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/policyeval"
)

var (
	// livePattern is a policy's path: projects/P/global/securityPolicies/N
	// or projects/P/regions/R/securityPolicies/N.
	livePattern = regexp.MustCompile(`^projects/([^/]+)/(?:global|regions/([^/]+))/securityPolicies/([^/]+)$`)
	// groupPattern is an address group's full name.
	groupPattern = regexp.MustCompile(`^((?:projects|organizations)/[^/]+)/locations/([^/]+)/addressGroups/([^/]+)$`)
)

// liveRef names the policy --live reads.
type liveRef struct{ project, region, name string }

func parseLive(s string) (liveRef, error) {
	m := livePattern.FindStringSubmatch(s)
	if m == nil {
		return liveRef{}, fmt.Errorf("--live: %q is not projects/PROJECT/global/securityPolicies/NAME or projects/PROJECT/regions/REGION/securityPolicies/NAME", s)
	}
	return liveRef{project: m[1], region: m[2], name: m[3]}, nil
}

// location is where the policy's project address groups live.
func (r liveRef) location() string {
	if r.region == "" {
		return "global"
	}
	return r.region
}

// loadLive reads the policy cfg.Live names from GCP, and the address
// groups its rules name, with the credentials the validate command uses.
func loadLive(ctx context.Context, cfg Config) (loaded, []string, error) {
	ref, err := parseLive(cfg.Live)
	if err != nil {
		return loaded{}, nil, err
	}
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	creds, err := cfg.GCPCredentials(cfg.Endpoint)
	if err != nil {
		return loaded{}, nil, err
	}
	client, err := gcp.NewClientForCredentials(ctx, creds, nil, nil)
	if err != nil {
		return loaded{}, nil, err
	}
	sp, err := client.Policies(ref.project, ref.region).GetFresh(ctx, ref.name)
	if err != nil {
		return loaded{}, nil, fmt.Errorf("--live: cannot read %s: %w", cfg.Live, err)
	}
	policy, err := policyeval.FromCompute(cfg.Live, sp)
	if err != nil {
		return loaded{}, nil, fmt.Errorf("--live: %s: %w", cfg.Live, err)
	}
	groups, notes := liveGroups(ctx, client.AddressGroups(), ref, policy)
	e, err := policyeval.New(groups...)
	if err != nil {
		return loaded{}, nil, fmt.Errorf("--live: %w", err)
	}
	notes = append([]string{fmt.Sprintf("--live: the cases run against %s as GCP holds it (%d rules); the cases file's policy and manifests are not read",
		cfg.Live, len(policy.Rules))}, notes...)
	return loaded{evaluator: e, policy: policy}, notes, nil
}

// liveGroups reads the address groups the policy's rules name: a short
// name is a group of the policy's project at its location (global, or its
// region); a full name is read as it is. An organization group named by
// its short name cannot be found without knowing the project's
// organization. A group not read is noted, and the rules that need it are
// not evaluable.
func liveGroups(ctx context.Context, c gcp.AddressGroupClient, ref liveRef, p policyeval.Policy) ([]policyeval.AddressGroup, []string) {
	project, org := policyeval.AddressGroupNames(p)
	var out []policyeval.AddressGroup
	var notes []string
	read := func(name string, isOrg bool) {
		k := gcp.GroupKey{Parent: gcp.ProjectParent(ref.project), Location: ref.location(), Name: name}
		if m := groupPattern.FindStringSubmatch(name); m != nil {
			k = gcp.GroupKey{Parent: m[1], Location: m[2], Name: m[3]}
		} else if isOrg {
			notes = append(notes, fmt.Sprintf("organization address group %q is not read: --live does not know the project's organization, so rules that use it are not evaluable", name))
			return
		}
		g, err := c.Get(ctx, k)
		if err != nil {
			notes = append(notes, fmt.Sprintf("address group %q (%s) cannot be read, so rules that use it are not evaluable: %v", name, k, err))
			return
		}
		out = append(out, policyeval.AddressGroup{Name: name, Organization: isOrg, Items: g.Items})
	}
	for _, n := range project {
		read(n, false)
	}
	for _, n := range org {
		read(n, true)
	}
	return out, notes
}
