package gcp

import (
	"context"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// An ErrorKind says what a caller should do about an error from GCP.
type ErrorKind int

// Error kinds, from most to least specific. Controllers branch on these
// rather than on HTTP codes, because GCP reports the same condition in
// several ways (a 404, a 400 naming a missing rule priority, an operation
// error code).
const (
	// KindUnknown is anything we cannot classify. Report it and retry with
	// the usual backoff.
	KindUnknown ErrorKind = iota
	// KindNotFound means the policy, or the rule at a priority, is gone.
	KindNotFound
	// KindAlreadyExists means an insert collided with an existing policy.
	KindAlreadyExists
	// KindNotReady means another operation on the same policy is running
	// (resourceNotReady, a 409 conflict, or an operation we stopped waiting
	// for). Retry soon; it is not the user's fault.
	KindNotReady
	// KindPreconditionFailed means a stale fingerprint (412 conditionNotMet).
	// Read again, then retry.
	KindPreconditionFailed
	// KindRateLimited means GCP asked us to slow down (429, or 403 with a
	// rate limit reason). Back off.
	KindRateLimited
	// KindQuotaExceeded means a project quota is exhausted. Retrying soon
	// cannot help; report and back off.
	KindQuotaExceeded
	// KindPermissionDenied means the credentials may not do this (401, or a
	// 403 that is not about rate limits). Report; do not retry hot.
	KindPermissionDenied
	// KindInvalid means GCP rejected the request itself (any other 400).
	// Report verbatim; do not retry hot.
	KindInvalid
	// KindTransient means a 5xx, a network error or a timeout. Retry.
	KindTransient
)

var kindNames = [...]string{
	KindUnknown:            "Unknown",
	KindNotFound:           "NotFound",
	KindAlreadyExists:      "AlreadyExists",
	KindNotReady:           "NotReady",
	KindPreconditionFailed: "PreconditionFailed",
	KindRateLimited:        "RateLimited",
	KindQuotaExceeded:      "QuotaExceeded",
	KindPermissionDenied:   "PermissionDenied",
	KindInvalid:            "Invalid",
	KindTransient:          "Transient",
}

// String returns the kind's CamelCase name, suitable for a metric label.
func (k ErrorKind) String() string {
	if k < 0 || int(k) >= len(kindNames) {
		return "ErrorKind(" + strconv.Itoa(int(k)) + ")"
	}
	return kindNames[k]
}

// Reasons and message fragments GCP uses. Reasons are compared
// case-insensitively because compute is not consistent about their case.
const (
	reasonAlreadyExists     = "alreadyExists"
	reasonNotReady          = "resourceNotReady"
	reasonRateLimit         = "rateLimitExceeded"
	reasonUserRateLimit     = "userRateLimitExceeded"
	reasonQuotaExceeded     = "quotaExceeded"
	msgMissingRulePriority  = "does not contain a rule at priority"
	msgDuplicatePriority    = "Cannot have rules with the same priorities"
	msgNotReady             = "is not ready"
	msgAlreadyExists        = "already exists"
	operationCodeQuota      = "QUOTA_EXCEEDED"
	operationCodeNotReady   = "RESOURCE_NOT_READY"
	operationCodeRateLimits = "RATE_LIMIT_EXCEEDED"
)

// Kind classifies err. A nil error is KindUnknown.
func Kind(err error) ErrorKind {
	if err == nil {
		return KindUnknown
	}
	var oe *OperationError
	if errors.As(err, &oe) {
		return oe.Kind()
	}
	var pe *OperationPendingError
	if errors.As(err, &pe) {
		return KindNotReady
	}
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return apiErrorKind(ge)
	}
	return otherErrorKind(err)
}

// apiErrorKind classifies an HTTP error response from the compute API.
func apiErrorKind(e *googleapi.Error) ErrorKind {
	switch {
	case e.Code == http.StatusNotFound:
		return KindNotFound
	case e.Code == http.StatusPreconditionFailed:
		return KindPreconditionFailed
	case e.Code == http.StatusTooManyRequests:
		return KindRateLimited
	case e.Code == http.StatusRequestTimeout || e.Code >= 500:
		return KindTransient
	case e.Code == http.StatusBadRequest:
		return badRequestKind(e)
	case e.Code == http.StatusConflict:
		return conflictKind(e)
	case e.Code == http.StatusUnauthorized || e.Code == http.StatusForbidden:
		return forbiddenKind(e)
	}
	return KindUnknown
}

// badRequestKind splits GCP's 400s. A patchRule or removeRule on a missing
// priority answers 400 "does not contain a rule at priority N", which means
// NotFound to us; an addRule at a taken priority answers 400 "Cannot have
// rules with the same priorities", which means AlreadyExists; a policy with a
// running operation answers 400 resourceNotReady.
func badRequestKind(e *googleapi.Error) ErrorKind {
	switch {
	case messageContains(e, msgMissingRulePriority):
		return KindNotFound
	case messageContains(e, msgDuplicatePriority):
		return KindAlreadyExists
	case hasReason(e, reasonNotReady) || messageContains(e, msgNotReady):
		return KindNotReady
	}
	return KindInvalid
}

// conflictKind splits GCP's 409s: alreadyExists on insert, anything else is
// a concurrent operation on the same resource.
func conflictKind(e *googleapi.Error) ErrorKind {
	if hasReason(e, reasonAlreadyExists) {
		return KindAlreadyExists
	}
	if hasReason(e, reasonNotReady) || messageContains(e, msgNotReady) {
		return KindNotReady
	}
	if messageContains(e, msgAlreadyExists) {
		return KindAlreadyExists
	}
	return KindNotReady
}

// forbiddenKind splits 401/403: compute reports some rate and quota limits
// as 403.
func forbiddenKind(e *googleapi.Error) ErrorKind {
	switch {
	case hasReason(e, reasonRateLimit) || hasReason(e, reasonUserRateLimit):
		return KindRateLimited
	case hasReason(e, reasonQuotaExceeded):
		return KindQuotaExceeded
	}
	return KindPermissionDenied
}

// otherErrorKind classifies errors that never reached GCP's error envelope.
func otherErrorKind(err error) ErrorKind {
	if errors.Is(err, context.DeadlineExceeded) {
		return KindTransient
	}
	if errors.Is(err, context.Canceled) {
		return KindUnknown
	}
	// *url.Error, *net.OpError and DNS errors all implement net.Error.
	var ne net.Error
	if errors.As(err, &ne) {
		return KindTransient
	}
	return KindUnknown
}

func hasReason(e *googleapi.Error, reason string) bool {
	for _, item := range e.Errors {
		if strings.EqualFold(item.Reason, reason) {
			return true
		}
	}
	return false
}

func messageContains(e *googleapi.Error, s string) bool {
	if strings.Contains(e.Message, s) {
		return true
	}
	for _, item := range e.Errors {
		if strings.Contains(item.Message, s) {
			return true
		}
	}
	return false
}

// IsNotFound reports whether err means the policy or rule does not exist: a
// 404, or the 400 "does not contain a rule at priority N".
func IsNotFound(err error) bool { return Kind(err) == KindNotFound }

// IsAlreadyExists reports whether err is a 409 alreadyExists.
func IsAlreadyExists(err error) bool { return Kind(err) == KindAlreadyExists }

// An OperationError is the error carried by a compute.Operation that
// finished (status DONE) unsuccessfully. The Go client returns such an
// operation without an error, so WaitForOperation converts it.
type OperationError struct {
	// Operation is the operation's name.
	Operation string
	// HTTPStatusCode is the operation's httpErrorStatusCode, if GCP set it.
	HTTPStatusCode int
	// Errors are GCP's error entries, in the order GCP sent them.
	Errors []OperationErrorItem
}

// An OperationErrorItem is one entry of an operation's error.errors.
type OperationErrorItem struct {
	// Code is GCP's code, for example QUOTA_EXCEEDED.
	Code string
	// Message is GCP's message, verbatim.
	Message string
}

// NewOperationError returns the error carried by op, or nil if op has none.
func NewOperationError(op *compute.Operation) *OperationError {
	if op == nil || op.Error == nil || len(op.Error.Errors) == 0 {
		if op != nil && op.HttpErrorStatusCode >= 400 {
			return &OperationError{Operation: op.Name, HTTPStatusCode: int(op.HttpErrorStatusCode),
				Errors: []OperationErrorItem{{Message: op.HttpErrorMessage}}}
		}
		return nil
	}
	oe := &OperationError{Operation: op.Name, HTTPStatusCode: int(op.HttpErrorStatusCode)}
	for _, e := range op.Error.Errors {
		oe.Errors = append(oe.Errors, OperationErrorItem{Code: e.Code, Message: e.Message})
	}
	return oe
}

// Error shows GCP's codes and messages verbatim, for example
// "QUOTA_EXCEEDED: Quota 'SECURITY_POLICY_RULES' exceeded.  Limit: 0.0 globally."
// Several entries are joined with "; ".
func (e *OperationError) Error() string {
	parts := make([]string, 0, len(e.Errors))
	for _, item := range e.Errors {
		switch {
		case item.Code == "":
			parts = append(parts, item.Message)
		case item.Message == "":
			parts = append(parts, item.Code)
		default:
			parts = append(parts, item.Code+": "+item.Message)
		}
	}
	if len(parts) == 0 {
		return "operation " + e.Operation + " failed"
	}
	return strings.Join(parts, "; ")
}

// operationCodeKinds maps compute operation error codes to kinds. Codes not
// listed fall back to the operation's HTTP status, then to KindInvalid when
// the code names a bad input.
var operationCodeKinds = map[string]ErrorKind{
	operationCodeQuota:                    KindQuotaExceeded,
	operationCodeNotReady:                 KindNotReady,
	operationCodeRateLimits:               KindRateLimited,
	"NOT_FOUND":                           KindNotFound,
	"RESOURCE_NOT_FOUND":                  KindNotFound,
	"ALREADY_EXISTS":                      KindAlreadyExists,
	"RESOURCE_ALREADY_EXISTS":             KindAlreadyExists,
	"CONDITION_NOT_MET":                   KindPreconditionFailed,
	"PRECONDITION_FAILED":                 KindPreconditionFailed,
	"FINGERPRINT_MISMATCH":                KindPreconditionFailed,
	"RESOURCE_OPERATION_RATE_EXCEEDED":    KindRateLimited,
	"INTERNAL_ERROR":                      KindTransient,
	"SERVICE_UNAVAILABLE":                 KindTransient,
	"DEADLINE_EXCEEDED":                   KindTransient,
	"PERMISSION_DENIED":                   KindPermissionDenied,
	"FORBIDDEN":                           KindPermissionDenied,
	"RESOURCE_IN_USE_BY_ANOTHER_RESOURCE": KindInvalid,
}

// Kind classifies the operation's first error entry that we recognise.
func (e *OperationError) Kind() ErrorKind {
	for _, item := range e.Errors {
		if k, ok := operationCodeKinds[item.Code]; ok {
			return k
		}
	}
	if e.HTTPStatusCode != 0 {
		return apiErrorKind(&googleapi.Error{Code: e.HTTPStatusCode, Message: e.Error()})
	}
	for _, item := range e.Errors {
		if strings.HasPrefix(item.Code, "INVALID") || strings.HasPrefix(item.Code, "BAD_REQUEST") {
			return KindInvalid
		}
	}
	return KindUnknown
}

// An OperationPendingError means we stopped waiting for an operation that
// GCP was still running. The write may yet succeed; the policy is not ready.
type OperationPendingError struct {
	// Operation is the operation's name.
	Operation string
	// Waited is how long we waited.
	Waited time.Duration
}

// Error says which operation is still running.
func (e *OperationPendingError) Error() string {
	return "operation " + e.Operation + " is still running after " + e.Waited.Round(time.Millisecond).String()
}
