package gcp

// A PolicyKey identifies one security policy across all credential sets.
// Region is empty for a global policy.
type PolicyKey struct {
	Project string
	Region  string
	Name    string
}

// String returns the policy's relative resource name, the form GCP uses in
// its own messages: projects/p/global/securityPolicies/n or
// projects/p/regions/r/securityPolicies/n.
func (k PolicyKey) String() string {
	if k.Region == "" {
		return "projects/" + k.Project + "/global/securityPolicies/" + k.Name
	}
	return "projects/" + k.Project + "/regions/" + k.Region + "/securityPolicies/" + k.Name
}
