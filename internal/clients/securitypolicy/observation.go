package securitypolicy

import (
	"cmp"
	"slices"
	"strconv"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// GenerateObservation returns status.atProvider for a policy as GCP reports
// it, server defaults included. Rules are sorted by numeric priority: GCP
// sorts them as text (0, 111111111, 2147483647, 555), which reads badly.
func GenerateObservation(observed *compute.SecurityPolicy) v1beta1.SecurityPolicyObservation {
	if observed == nil {
		return v1beta1.SecurityPolicyObservation{}
	}
	o := v1beta1.SecurityPolicyObservation{
		SelfLink:          observed.SelfLink,
		Fingerprint:       observed.Fingerprint,
		LabelFingerprint:  observed.LabelFingerprint,
		CreationTimestamp: observed.CreationTimestamp,
		Type:              observed.Type,
		Region:            observed.Region,
	}
	// An id of 0 means GCP did not report one; "0" would read as a real id.
	if observed.Id != 0 {
		o.ID = strconv.FormatUint(observed.Id, 10)
	}
	for _, r := range observed.Rules {
		if r != nil {
			o.Rules = append(o.Rules, GenerateRuleObservation(r))
		}
	}
	o.RuleCount = len(o.Rules)
	slices.SortStableFunc(o.Rules, func(a, b v1beta1.RuleObservation) int { return cmp.Compare(a.Priority, b.Priority) })
	return o
}

// GenerateRuleObservation returns the summary of a rule reported in status:
// priority, action, description, preview and the match (source ranges as GCP
// holds them, or the expression).
func GenerateRuleObservation(r *compute.SecurityPolicyRule) v1beta1.RuleObservation {
	if r == nil {
		return v1beta1.RuleObservation{}
	}
	o := v1beta1.RuleObservation{
		Priority:    r.Priority,
		Action:      r.Action,
		Description: r.Description,
		Preview:     r.Preview,
	}
	if m := r.Match; m != nil {
		if m.Config != nil {
			o.SrcIpRanges = clip(m.Config.SrcIpRanges)
		}
		if m.Expr != nil {
			o.Expression = m.Expr.Expression
		}
	}
	return o
}
