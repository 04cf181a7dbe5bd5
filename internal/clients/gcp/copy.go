package gcp

import (
	"encoding/json"

	"google.golang.org/api/compute/v1"
)

// DeepCopyPolicy returns a copy of p that shares nothing with it, for a
// caller that must modify a shared snapshot. The compute types have no
// generated DeepCopy; a JSON round trip copies every field the API knows,
// which is all a snapshot holds (ServerResponse is dropped). It panics only
// if the compute types stop round-tripping through JSON.
func DeepCopyPolicy(p *compute.SecurityPolicy) *compute.SecurityPolicy {
	if p == nil {
		return nil
	}
	out := &compute.SecurityPolicy{}
	mustRoundTrip(p, out)
	return out
}

// DeepCopyRule returns a copy of r that shares nothing with it.
func DeepCopyRule(r *compute.SecurityPolicyRule) *compute.SecurityPolicyRule {
	if r == nil {
		return nil
	}
	out := &compute.SecurityPolicyRule{}
	mustRoundTrip(r, out)
	return out
}

func mustRoundTrip(in, out any) {
	b, err := json.Marshal(in)
	if err == nil {
		err = json.Unmarshal(b, out)
	}
	if err != nil {
		panic("cannot deep copy compute object: " + err.Error())
	}
}
