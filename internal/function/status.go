package function

import (
	"encoding/json"
	"reflect"

	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"
)

// TypeCurrent is the IPAllowlist condition that says whether GCP follows its sources. Its last
// transition time says since when it does, or does not.
const TypeCurrent = "Current"

// Reasons of the Current condition. The SecurityPolicyAllowlist gives the others (Composed,
// SourceHeld, SourceUnreadable, CannotCompose, Switching), which the IPAllowlist shows as they
// are.
const (
	ReasonComposed       = "Composed"
	ReasonSourcesPending = "SourcesPending"
	ReasonCannotCompose  = "CannotCompose"
	// ReasonSourceUnreadable: a cluster, project or Secret a source names cannot be read; GCP
	// keeps its last addresses.
	ReasonSourceUnreadable = "SourceUnreadable"
	ReasonInvalidSpec      = "InvalidSpec"
)

// reported is what the observed SecurityPolicyAllowlist says of GCP.
type reported struct {
	IPCount int64 `json:"ipCount"`
	// RangesInGCP counts the ranges of IPCount that GCP is confirmed to hold.
	RangesInGCP      int64    `json:"rangesInGCP"`
	RuleCount        int64    `json:"ruleCount"`
	UnmatchedSources []string `json:"unmatchedSources"`
	Warnings         []string `json:"warnings"`
	// current is its Current condition; its status is Unknown until the allowlist has
	// reported on its current spec.
	current xpv2.Condition
	// ready is whether the allowlist is Ready.
	ready bool
}

// attachable reports whether the allowlist has reported, on its current spec, that it is Ready
// and that GCP holds every range it allows: only then may a backend first name its policy, which
// denies whatever it does not allow.
func (r reported) attachable() bool {
	return r.current.Status != corev1.ConditionUnknown && r.ready && r.RangesInGCP >= r.IPCount
}

// settled reports whether the allowlist has reported, on its current spec, that GCP holds
// what it should: nothing is left to wait for.
func (r reported) settled() bool {
	return r.current.Status == corev1.ConditionTrue && r.ready
}

// readAllowlist reads the observed SecurityPolicyAllowlist's status. An allowlist not observed
// yet, whose spec is not the desired one yet (the reconcile that applies a change of the
// IPAllowlist sees the allowlist as it was), or that has not reported on its current spec, is
// SourcesPending: its status would describe another spec.
func readAllowlist(observed map[resource.Name]resource.ObservedComposed, desired *composed.Unstructured) reported {
	r := unreported()
	oc, ok := observed[allowlistResource]
	if !ok || oc.Resource == nil {
		return r
	}
	u := oc.Resource
	if !sameJSON(u.Object["spec"], desired.Object["spec"]) {
		return r
	}
	// GetValueInto, not GetInteger or GetGeneration: resources reach the function as protobuf
	// Structs, whose numbers are all float64, which those read as absent.
	var gen, observedGen int64
	_ = u.GetValueInto("metadata.generation", &gen)
	_ = u.GetValueInto("status.observedGeneration", &observedGen)
	c := u.GetCondition(TypeCurrent)
	if observedGen < gen || (c.Status != corev1.ConditionTrue && c.Status != corev1.ConditionFalse) {
		return r
	}
	_ = u.GetValueInto("status", &r)
	r.current = c
	r.ready = u.GetCondition(xpv2.TypeReady).Status == corev1.ConditionTrue
	return r
}

// unreported is what an allowlist that has not reported on its current spec says.
func unreported() reported {
	return reported{current: xpv2.Condition{Status: corev1.ConditionUnknown, Reason: ReasonSourcesPending,
		Message: "waiting for the SecurityPolicyAllowlist to report on its spec"}}
}

// sameJSON reports whether a and b are equal as JSON: an observed object's numbers arrive as
// float64, a desired one's as int64.
func sameJSON(a, b any) bool {
	ja, errA := json.Marshal(a)
	jb, errB := json.Marshal(b)
	if errA != nil || errB != nil {
		return false
	}
	var va, vb any
	if json.Unmarshal(ja, &va) != nil || json.Unmarshal(jb, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

// report sets the IPAllowlist's status and Current condition from what its allowlist reported.
func report(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, oxr *resource.Composite, s Spec, r reported) error {
	for _, w := range r.Warnings {
		response.Warning(rsp, errors.New(w)).TargetComposite()
	}
	if r.current.Status == corev1.ConditionUnknown {
		// Nothing new to say of GCP yet: keep what the IPAllowlist shows, its Current condition
		// included. Crossplane 2.4 re-applies the conditions it read at the start of a reconcile
		// with server-side apply before it writes the new ones, so a reconcile that starts from a
		// cache one write behind puts the old condition back and then the new one: every change
		// of a condition can echo a few times, each echo two writes, each write two of the
		// tokens of its circuit breaker (100 at most, one refilled a second). Flipping to
		// SourcesPending and back on each edit of the spec gave it two more changes to echo
		// (TestGroupMode wrote the IPAllowlist 36 times in its first 8 s; 26 without the flip).
		if c := oxr.Resource.GetCondition(TypeCurrent); c.Status == corev1.ConditionTrue || c.Status == corev1.ConditionFalse {
			r.current = c
		}
		setCurrent(rsp, r.current)
		return setStatus(rsp, req, observedStatus(oxr))
	}
	all := make([]any, 0, len(r.UnmatchedSources))
	for _, n := range r.UnmatchedSources {
		all = append(all, n)
	}
	status := map[string]any{
		"ipCount":          r.IPCount,
		"ruleCount":        r.RuleCount,
		"unmatchedSources": all,
		"policyName":       s.Policy.Name,
	}
	if s.groupMode() {
		status["addressGroup"] = s.AddressGroup.Name
	}
	if err := setStatus(rsp, req, status); err != nil {
		return err
	}
	if r.current.Status != corev1.ConditionTrue && (r.current.Reason == ReasonCannotCompose || r.current.Reason == ReasonSourceUnreadable) {
		// As when the function itself cannot compose: the team sees why in an event. A source
		// out of reach needs someone too: its addresses in GCP may be stale.
		response.Warning(rsp, errors.New(r.current.Message)).TargetComposite()
	}
	setCurrent(rsp, r.current)
	return nil
}

// setCurrent sets the IPAllowlist's Current condition to c: True when c is, else False.
func setCurrent(rsp *fnv1.RunFunctionResponse, c xpv2.Condition) {
	if c.Status == corev1.ConditionTrue {
		response.ConditionTrue(rsp, TypeCurrent, string(c.Reason)).WithMessage(c.Message).TargetComposite()
		return
	}
	response.ConditionFalse(rsp, TypeCurrent, string(c.Reason)).WithMessage(c.Message).TargetComposite()
}

// setStatus sets the desired IPAllowlist's status fields (keys under status).
func setStatus(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, fields map[string]any) error {
	dxr, err := request.GetDesiredCompositeResource(req)
	if err != nil {
		return errors.Wrap(err, "cannot get the desired IPAllowlist")
	}
	for k, v := range fields {
		if err := dxr.Resource.SetValue("status."+k, v); err != nil {
			return errors.Wrapf(err, "cannot set status.%s", k)
		}
	}
	return errors.Wrap(response.SetDesiredCompositeResource(rsp, dxr), "cannot set the desired IPAllowlist")
}

// observedStatus is the status fields the function writes, as the IPAllowlist shows them.
// Crossplane applies the desired IPAllowlist with server-side apply, so a status field left out
// would be removed.
func observedStatus(oxr *resource.Composite) map[string]any {
	out := map[string]any{}
	for _, k := range []string{"ipCount", "ruleCount", "unmatchedSources", "policyName", "addressGroup"} {
		if v, err := oxr.Resource.GetValue("status." + k); err == nil {
			out[k] = v
		}
	}
	return out
}
