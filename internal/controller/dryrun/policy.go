package dryrun

import (
	"context"
	"fmt"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcppolicy"
	"github.com/armorplane/provider-cloudarmor/internal/controller/verdict"
)

const (
	msgFmtAccepted = "GCP accepts %s (validateOnly)"
	msgFmtRefused  = "GCP refuses %s: %s"
	msgFmtNotAsked = "not asked: %s"
)

// AskPolicy is the dry run of a kind that writes a security policy
// (SecurityPolicy, SecurityPolicyRule): record, ask, refusal, answer. It
// records the validateOnly requests ask would send (gcppolicy.Record) for
// their hash and, unless GCP answered the same requests already (see Ask),
// sends them through v: GCP's refusal of one (a gcppolicy.Refusal) is
// Refused, naming it; else Accepted, naming them all. An error that is not
// a refusal is Observe's error, wrapped in errMsg. unasked, when not nil,
// returns what ask could not ask about in its last run: with no request to
// send, that alone is reported (NotAsked); else it follows the acceptance.
func AskPolicy(ctx context.Context, o resource.Managed, last **v1beta1.DryRunStatus, rec event.Recorder, errMsg string,
	v gcp.PolicyValidator, ask func(context.Context, gcp.PolicyValidator) error, unasked func() []string) (managed.ExternalObservation, error) {
	reqs, err := gcppolicy.Record(ctx, ask)
	if err != nil {
		return verdict.Fail(errors.Wrap(err, errMsg))
	}
	return Ask(o, last, rec, reqs.Hash, errMsg, func() (Answer, error) {
		if unasked != nil && len(reqs.Calls) == 0 {
			return NotAsked(fmt.Sprintf(msgFmtNotAsked, strings.Join(unasked(), "; "))), nil
		}
		var refusal *gcppolicy.Refusal
		if err := ask(ctx, v); errors.As(err, &refusal) {
			return Refused(fmt.Sprintf(msgFmtRefused, refusal.Call, refusal.Message())), nil
		} else if err != nil {
			return Answer{}, err
		}
		msg := fmt.Sprintf(msgFmtAccepted, strings.Join(reqs.Calls, ", "))
		if unasked != nil {
			if u := unasked(); len(u) > 0 {
				msg += "; " + fmt.Sprintf(msgFmtNotAsked, strings.Join(u, "; "))
			}
		}
		return Accepted(msg), nil
	})
}
