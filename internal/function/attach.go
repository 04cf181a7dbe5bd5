package function

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/types/known/durationpb"
	corev1 "k8s.io/api/core/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/crossplane/function-sdk-go/errors"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/resource/composed"
	"github.com/crossplane/function-sdk-go/response"
)

// AttachTarget is one entry of spec.attachTo: a backend whose field is to name the allowlist's
// policy. It has no region or project of its own: GCP attaches a policy only to backends of
// its project and scope, so the policy's are the backend's.
type AttachTarget struct {
	// BackendService is a backend service of the policy's scope (global, or the policy's
	// region), whose securityPolicy names the policy.
	BackendService string `json:"backendService,omitempty"`
	// BackendBucket is a backend bucket, whose edgeSecurityPolicy names the policy: it takes
	// only a global CLOUD_ARMOR_EDGE policy, which the allowlist never creates.
	BackendBucket string `json:"backendBucket,omitempty"`
}

// TypeAttached is the IPAllowlist condition that says whether every backend of spec.attachTo
// names the policy. It is set only on an IPAllowlist that names a backend.
const TypeAttached = "Attached"

// Reasons of the Attached condition.
const (
	// ReasonAttached: every backend names the policy.
	ReasonAttached = "Attached"
	// ReasonAttaching: a backend does not name it yet, and nothing says it will not.
	ReasonAttaching = "Attaching"
	// ReasonContested: another writer keeps setting a backend's field back, and its
	// attachment stopped writing until the team acts (docs/attach.md).
	ReasonContested = "Contested"
	// ReasonAttachError: an attachment cannot write: another object owns the field, or GCP
	// refused the write.
	ReasonAttachError = "AttachError"
	// ReasonNoTarget: spec.attachTo was emptied; the attachments are deleted, which detaches
	// the policy where the field still names it.
	ReasonNoTarget = "NoTarget"
)

const (
	attachmentKind = "SecurityPolicyAttachment"
	// attachmentPrefix starts the composition resource name of each attachment. The rest is
	// the target, not its index: an attachment's target is immutable, so a target removed from
	// the list must delete its own attachment, never retarget another's.
	attachmentPrefix = "attachment-"
)

func (a AttachTarget) resourceName() resource.Name {
	if a.BackendBucket != "" {
		return resource.Name(attachmentPrefix + "backendBucket-" + a.BackendBucket)
	}
	return resource.Name(attachmentPrefix + "backendService-" + a.BackendService)
}

func (a AttachTarget) String() string {
	if a.BackendBucket != "" {
		return "backend bucket " + a.BackendBucket
	}
	return "backend service " + a.BackendService
}

func isAttachment(name resource.Name) bool {
	return strings.HasPrefix(string(name), attachmentPrefix)
}

// validateAttachTo checks what the XRD's CEL rules check too: render and older API servers
// do not run them.
func (s Spec) validateAttachTo() error {
	seen := map[resource.Name]bool{}
	for _, a := range s.AttachTo {
		if (a.BackendService == "") == (a.BackendBucket == "") {
			return fmt.Errorf("each spec.attachTo entry needs exactly one of backendService and backendBucket")
		}
		if seen[a.resourceName()] {
			return fmt.Errorf("spec.attachTo names %s twice", a)
		}
		seen[a.resourceName()] = true
		if a.BackendBucket != "" && (s.Policy.Create || s.Policy.Region != "") {
			return fmt.Errorf("%s takes only a global CLOUD_ARMOR_EDGE policy, in its edgeSecurityPolicy: name an existing edge policy, without policy.create or policy.region", a)
		}
	}
	return nil
}

// AttachmentResource is the SecurityPolicyAttachment of one target, naming the policy by its
// GCP name in the policy's project (the ProviderConfig's when unset). Crossplane names it:
// a name of ours could collide with an attachment the team made itself.
func AttachmentResource(s Spec, a AttachTarget) *composed.Unstructured {
	target := map[string]any{"kind": "BackendService", "name": a.BackendService}
	field := "securityPolicy"
	switch {
	case a.BackendBucket != "":
		target = map[string]any{"kind": "BackendBucket", "name": a.BackendBucket}
		field = "edgeSecurityPolicy"
	case s.Policy.Region != "":
		target["region"] = s.Policy.Region
	}
	forProvider := map[string]any{"securityPolicy": s.Policy.Name, "target": target, "field": field}
	if s.Policy.Project != "" {
		forProvider["project"] = s.Policy.Project
	}
	spec := map[string]any{"forProvider": forProvider}
	providerConfig(spec, s.ProviderConfigRef)

	u := composed.New()
	u.SetAPIVersion(allowlistAPIVersion)
	u.SetKind(attachmentKind)
	u.Object["spec"] = spec
	return u
}

// composeAttachments adds the attachment of each target to desired. A target is first
// attached, or its attachment pointed at another policy, only once the allowlist is attachable:
// Ready on its current spec with every range in GCP, read back from GCP. A policy attached before
// its allow rules would deny the very sources it lists. An attachment composed before stays
// composed whatever the allowlist says since, so a held source never detaches the policy.
func composeAttachments(s Spec, observed map[resource.Name]resource.ObservedComposed, desired map[resource.Name]*resource.DesiredComposed, attachable bool) {
	for _, a := range s.AttachTo {
		name := a.resourceName()
		want := AttachmentResource(s, a)
		oc, composedBefore := observed[name]
		switch {
		case attachable:
		case !composedBefore:
			continue
		case oc.Resource != nil && namedPolicy(oc.Resource.Object) != namedPolicy(want.Object):
			// A new policy name: the backend keeps the policy it names until the new one
			// holds every range.
			want = unchanged(oc)
		}
		desired[name] = &resource.DesiredComposed{Resource: want}
	}
}

// namedPolicy is the policy an attachment's spec names.
func namedPolicy(o map[string]any) string {
	spec, _ := o["spec"].(map[string]any)
	fp, _ := spec["forProvider"].(map[string]any)
	p, _ := fp["securityPolicy"].(string)
	return p
}

// attachState is what one target's attachment says.
type attachState struct {
	reason, message string
}

// stateOf reads the attachment of a, if composed, as Crossplane observes it.
func stateOf(s Spec, a AttachTarget, observed map[resource.Name]resource.ObservedComposed, desired map[resource.Name]*resource.DesiredComposed) attachState {
	name := a.resourceName()
	if _, ok := desired[name]; !ok {
		return attachState{ReasonAttaching, fmt.Sprintf("%s: attached once GCP holds every range of the allowlist (its SecurityPolicyAllowlist is Ready, rangesInGCP equal to ipCount)", a)}
	}
	oc, ok := observed[name]
	if !ok || oc.Resource == nil {
		return attachState{ReasonAttaching, fmt.Sprintf("%s: waiting for its SecurityPolicyAttachment", a)}
	}
	u := oc.Resource
	if c := u.GetCondition("Contested"); c.Status == corev1.ConditionTrue {
		return attachState{ReasonContested, fmt.Sprintf("%s: %s", a, c.Message)}
	}
	if c := u.GetCondition(xpv2.TypeSynced); c.Status == corev1.ConditionFalse {
		return attachState{ReasonAttachError, fmt.Sprintf("%s: %s", a, c.Message)}
	}
	if c := u.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
		msg := c.Message
		if msg == "" {
			msg = "waiting for its SecurityPolicyAttachment to report"
		}
		return attachState{ReasonAttaching, fmt.Sprintf("%s: %s", a, msg)}
	}
	return attachState{ReasonAttached, fmt.Sprintf("%s names policy %s", a, s.Policy.Name)}
}

// reportAttachments sets the IPAllowlist's Attached condition from its attachments: the
// worst of them decides the reason (Contested, then AttachError, then Attaching), and the
// message lists each target of that reason. A contest is also a warning event, as it waits for
// the team. Until every target is attached Crossplane is asked to run the function again soon.
func reportAttachments(rsp *fnv1.RunFunctionResponse, oxr *resource.Composite, s Spec,
	observed map[resource.Name]resource.ObservedComposed, desired map[resource.Name]*resource.DesiredComposed) {
	if len(s.AttachTo) == 0 {
		// Only an IPAllowlist that showed Attached is told it no longer is; one that never
		// named a backend gets no condition.
		if c := oxr.Resource.GetCondition(TypeAttached); c.Status == corev1.ConditionTrue || c.Status == corev1.ConditionFalse {
			response.ConditionFalse(rsp, TypeAttached, ReasonNoTarget).WithMessage("spec.attachTo names no backend").TargetComposite()
		}
		return
	}
	byReason := map[string][]string{}
	for _, a := range s.AttachTo {
		st := stateOf(s, a, observed, desired)
		byReason[st.reason] = append(byReason[st.reason], st.message)
	}
	for _, reason := range []string{ReasonContested, ReasonAttachError, ReasonAttaching} {
		msgs, ok := byReason[reason]
		if !ok {
			continue
		}
		msg := strings.Join(msgs, "; ")
		if reason == ReasonContested {
			response.Warning(rsp, errors.New(msg)).TargetComposite()
		}
		response.ConditionFalse(rsp, TypeAttached, reason).WithMessage(msg).TargetComposite()
		rsp.Meta.Ttl = durationpb.New(WaitingTTL)
		return
	}
	response.ConditionTrue(rsp, TypeAttached, ReasonAttached).WithMessage(strings.Join(byReason[ReasonAttached], "; ")).TargetComposite()
}
