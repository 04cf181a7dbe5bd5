package securitypolicies

import (
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// A reference is a compute resource URL as clients send it: a full URL, a
// path from projects/, a path from global/ or regions/, or a bare name.
type reference struct {
	scope scope
	name  string
}

// parseRef reads a reference to an object of collection, relative to
// within (the project, and the region for regional references). ok is
// false when ref does not have a reference's shape.
func parseRef(ref, collection string, within scope) (reference, bool) {
	s := strings.TrimPrefix(ref, apiRoot)
	if i := strings.Index(s, "/compute/v1/"); i >= 0 {
		s = s[i+len("/compute/v1/"):]
	}
	segs := strings.Split(s, "/")
	out := reference{scope: scope{Project: within.Project, Region: within.Region}}
	switch {
	case len(segs) == 1:
		out.name = segs[0]
	case len(segs) >= 2 && segs[len(segs)-2] == collection:
		out.name = segs[len(segs)-1]
		head := segs[:len(segs)-2]
		if len(head) >= 2 && head[0] == "projects" {
			out.scope.Project = head[1]
			head = head[2:]
		}
		switch {
		case len(head) == 1 && head[0] == "global":
			out.scope.Region = ""
		case len(head) == 2 && head[0] == "regions":
			out.scope.Region = head[1]
		default:
			return reference{}, false
		}
	default:
		return reference{}, false
	}
	return out, core.NamePattern.MatchString(out.name)
}

// errInUse is compute's refusal to delete a resource another one uses.
func errInUse(kind, resource, user string) *core.Error {
	return core.ErrInUse(kind, resource, user)
}

// ResolvePolicyLocked checks that ref names a security policy a user of
// the given kind ("backend service", "backend bucket", which GCP's message
// names) in sc may use in the given field: securityPolicy takes a
// CLOUD_ARMOR policy of the user's scope (global for a global backend, the
// same region for a regional one), edgeSecurityPolicy a global
// CLOUD_ARMOR_EDGE policy. It returns the policy's selfLink. The host's lock must be
// held.
func (a *API) ResolvePolicyLocked(kind string, sc scope, field, ref string) (string, error) {
	st := a.st
	want := "CLOUD_ARMOR"
	if field == "edgeSecurityPolicy" {
		want = "CLOUD_ARMOR_EDGE"
	}
	f := "resource." + field
	r, ok := parseRef(ref, "securityPolicies", sc)
	if !ok {
		return "", core.ErrInvalidField(f, ref, "The security policy must be a security policy URL or name.")
	}
	if r.scope.Region != sc.Region {
		where := "global"
		if sc.Region != "" {
			where = "in region '" + sc.Region + "'"
		}
		return "", core.ErrInvalidField(f, ref, "The security policy must be "+where+", like the "+kind+".")
	}
	p, ok := st.policies[r.scope.PolicyPath(r.name)]
	if !ok {
		return "", core.ErrNotFound(r.scope.PolicyPath(r.name))
	}
	if policyType(p) != want {
		return "", core.ErrInvalidField(f, ref, "The security policy must be of type "+want+"; '"+p.Name+"' is of type "+policyType(p)+".")
	}
	return apiRoot + p.path(), nil
}

// ResolveNetworkPolicyLocked checks the securityPolicy of a network edge
// security service in sc: a CLOUD_ARMOR_NETWORK policy of the same project
// and region, in a project on Cloud Armor Enterprise. Every refusal is a
// 400. It returns the policy's selfLink. The host's lock must be held.
func (a *API) ResolveNetworkPolicyLocked(sc scope, ref string) (string, error) {
	st := a.st
	const f = "resource.securityPolicy"
	r, ok := parseRef(ref, "securityPolicies", sc)
	if !ok {
		return "", core.ErrInvalidField(f, ref, "The security policy must be a security policy URL or name.")
	}
	if r.scope != sc {
		return "", core.ErrInvalidField(f, ref, "The security policy must be a regional security policy of project '"+
			sc.Project+"' in region '"+sc.Region+"', like the network edge security service.")
	}
	p, ok := st.policies[r.scope.PolicyPath(r.name)]
	if !ok {
		return "", core.ErrInvalidField(f, ref, "The resource '"+r.scope.PolicyPath(r.name)+"' was not found.")
	}
	if policyType(p) != "CLOUD_ARMOR_NETWORK" {
		return "", core.ErrInvalidField(f, ref, "The security policy must be of type CLOUD_ARMOR_NETWORK; '"+
			p.Name+"' is of type "+policyType(p)+".")
	}
	if tier := st.tierLocked(sc.Project); !enterprise(tier) {
		return "", core.ErrInvalidField(f, ref, "Network edge security policies need Cloud Armor Enterprise; project '"+
			sc.Project+"' is on "+tier+".")
	}
	return apiRoot + p.path(), nil
}
