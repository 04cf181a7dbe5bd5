package securitypolicies

import (
	"fmt"
	"strconv"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// The errors only security policies answer; those every API shares are
// core's.

func errDuplicatePriority(p int64) *core.Error {
	return core.ErrInvalidField("resource.priority", strconv.FormatInt(p, 10),
		"Cannot have rules with the same priorities.")
}

func errNoRule(p int64) *core.Error {
	return core.ErrInvalidField("priority", strconv.FormatInt(p, 10),
		fmt.Sprintf("The security policy does not contain a rule at priority %d.", p))
}

func errLabelFingerprint() *core.Error {
	return &core.Error{Code: 412, Reason: "conditionNotMet",
		Message: "Labels fingerprint either invalid or resource labels have changed"}
}
