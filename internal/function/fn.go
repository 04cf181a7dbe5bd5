package function

import (
	"context"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/crossplane/function-sdk-go/errors"
	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/request"
	"github.com/crossplane/function-sdk-go/resource"
	"github.com/crossplane/function-sdk-go/response"
)

// WaitingTTL is how soon the function asks Crossplane to run it again while the IPAllowlist
// waits for progress it cannot be told about for sure: the allowlist not reported on its spec,
// not Ready, switching, or sources held. Crossplane otherwise runs it when a composed resource
// changes, but its circuit breaker drops those events while open (an edit storm can open it),
// and the default TTL of a minute would leave a settled allowlist reported as waiting that long.
// Each extra run costs one function call and no GCP call.
const WaitingTTL = 15 * time.Second

// Function is the IPAllowlist composition function.
type Function struct {
	fnv1.UnimplementedFunctionRunnerServiceServer

	log logging.Logger
}

// New returns the function, logging to log.
func New(log logging.Logger) *Function {
	return &Function{log: log}
}

// RunFunction composes an IPAllowlist's SecurityPolicyAllowlist and the SecurityPolicyAttachment
// of each backend it names, and reports their status on the IPAllowlist.
func (f *Function) RunFunction(_ context.Context, req *fnv1.RunFunctionRequest) (*fnv1.RunFunctionResponse, error) {
	rsp := response.To(req, response.DefaultTTL)
	oxr, err := request.GetObservedCompositeResource(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed IPAllowlist"))
		return rsp, nil
	}
	spec := Spec{}
	if err := oxr.Resource.GetValueInto("spec", &spec); err != nil {
		stale(rsp, ReasonInvalidSpec, errors.Wrap(err, "cannot read the IPAllowlist's spec"))
		return rsp, nil
	}
	xrNamespace := oxr.Resource.GetNamespace()
	if err := spec.Validate(); err != nil {
		stale(rsp, ReasonInvalidSpec, err)
		return rsp, nil
	}
	if err := spec.inNamespace(xrNamespace); err != nil {
		stale(rsp, ReasonInvalidSpec, err)
		return rsp, nil
	}
	observed, err := request.GetObservedComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the observed composed resources"))
		return rsp, nil
	}
	desired, err := request.GetDesiredComposedResources(req)
	if err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot get the desired composed resources"))
		return rsp, nil
	}

	keepEarlierComposition(observed, desired)
	r, err := composeAllowlist(rsp, req, oxr, spec, observed, desired)
	if err != nil {
		response.Fatal(rsp, err)
		return rsp, nil
	}
	composeAttachments(spec, observed, desired, r.attachable())
	reportAttachments(rsp, oxr, spec, observed, desired)
	if err := response.SetDesiredComposedResources(rsp, desired); err != nil {
		response.Fatal(rsp, errors.Wrap(err, "cannot set the desired composed resources"))
	}
	return rsp, nil
}

// composeAllowlist composes the SecurityPolicyAllowlist from the spec, and reports its status on
// the IPAllowlist.
func composeAllowlist(rsp *fnv1.RunFunctionResponse, req *fnv1.RunFunctionRequest, oxr *resource.Composite, spec Spec,
	observed map[resource.Name]resource.ObservedComposed, desired map[resource.Name]*resource.DesiredComposed) (reported, error) {
	allowlist := AllowlistResource(spec, oxr.Resource.GetNamespace(), oxr.Resource.GetName())
	desired[allowlistResource] = &resource.DesiredComposed{Resource: allowlist}
	r := readAllowlist(observed, allowlist)
	if !r.settled() {
		rsp.Meta.Ttl = durationpb.New(WaitingTTL)
	}
	return r, report(rsp, req, oxr, spec, r)
}

// keepEarlierComposition keeps what an earlier version of this function composed (the policy,
// and the rules, address groups and AddressSets it composed one by one) exactly as it is, until
// the SecurityPolicyAllowlist has adopted it. Adopted, it is no longer Crossplane's: Crossplane
// stops observing it and never deletes it, so an upgrade keeps every rule in GCP. Attachments
// are not an earlier composition: one whose target left spec.attachTo is to be deleted.
func keepEarlierComposition(observed map[resource.Name]resource.ObservedComposed, desired map[resource.Name]*resource.DesiredComposed) {
	for name, oc := range observed {
		if name == allowlistResource || isAttachment(name) || oc.Resource == nil {
			continue
		}
		desired[name] = &resource.DesiredComposed{Resource: unchanged(oc)}
	}
}

// stale reports an error that leaves every composed resource as it is: a fatal result, which
// makes Crossplane apply nothing, and Current=False saying why.
func stale(rsp *fnv1.RunFunctionResponse, reason string, err error) {
	response.ConditionFalse(rsp, TypeCurrent, reason).WithMessage(err.Error()).TargetComposite()
	response.Fatal(rsp, err)
}
