package gcp

// A PolicyKey identifies one security policy across all credential sets.
// Region is empty for a global policy. An organization policy has no
// Project: Org is set and its Name is the numeric id GCP gave it, unique
// across organizations, so that every object reading one policy shares its
// snapshot whether or not it knows the policy's parent.
type PolicyKey struct {
	Project string
	Region  string
	Name    string
	Org     bool
}

// String returns the policy's relative resource name, the form GCP uses in
// its own messages: projects/p/global/securityPolicies/n or
// projects/p/regions/r/securityPolicies/n, or
// locations/global/securityPolicies/id for an organization policy.
func (k PolicyKey) String() string {
	if k.Org {
		return "locations/global/securityPolicies/" + k.Name
	}
	if k.Region == "" {
		return "projects/" + k.Project + "/global/securityPolicies/" + k.Name
	}
	return "projects/" + k.Project + "/regions/" + k.Region + "/securityPolicies/" + k.Name
}
