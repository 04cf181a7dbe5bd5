package core

import (
	"fmt"
	"net/http"
	"strconv"
)

// An RPCError is an error in the format of Google's newer APIs, such as
// networksecurity v1: a google.rpc.Status as JSON,
// {"error": {"code", "message", "status", "details"}}, without compute's
// "errors" list. Every address group recording's 404 has this shape.
type RPCError struct {
	Code       int    // HTTP status code
	Status     string // google.rpc.Code name, e.g. NOT_FOUND
	Message    string
	Details    []any
	RetryAfter int // seconds, sent as Retry-After when > 0
}

func (e *RPCError) Error() string {
	return fmt.Sprintf("googleapi: Error %d: %s", e.Code, e.Message)
}

// rpcStatuses is the google.rpc.Code name GCP pairs with each HTTP status.
var rpcStatuses = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	409: "ALREADY_EXISTS", 412: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
	503: "UNAVAILABLE",
}

// RPCCodes are the google.rpc.Code numbers, used in an operation's error.
var RPCCodes = map[string]int{
	"INVALID_ARGUMENT": 3, "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7,
	"RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9, "INTERNAL": 13, "UNAVAILABLE": 14,
	"UNAUTHENTICATED": 16,
}

// ErrRPCNotFound is the recorded 404 of networksecurity:
// "Resource 'projects/P/locations/global/addressGroups/N' was not found".
func ErrRPCNotFound(resource string) *RPCError {
	return &RPCError{Code: 404, Status: "NOT_FOUND", Message: fmt.Sprintf("Resource '%s' was not found", resource)}
}

// ErrRPCAlreadyExists is not recorded; its wording follows the recorded 404.
func ErrRPCAlreadyExists(resource string) *RPCError {
	return &RPCError{Code: 409, Status: "ALREADY_EXISTS", Message: fmt.Sprintf("Resource '%s' already exists", resource)}
}

func ErrRPCInvalid(format string, args ...any) *RPCError {
	return &RPCError{Code: 400, Status: "INVALID_ARGUMENT", Message: fmt.Sprintf(format, args...)}
}

func ErrRPCPrecondition(format string, args ...any) *RPCError {
	return &RPCError{Code: 400, Status: "FAILED_PRECONDITION", Message: fmt.Sprintf(format, args...)}
}

// ErrRPCForbidden is the usual IAM denial of Google's newer APIs: the
// permission, the resource as a full resource name, and an ErrorInfo.
func ErrRPCForbidden(permission, resource string) *RPCError {
	return &RPCError{Code: 403, Status: "PERMISSION_DENIED",
		Message: fmt.Sprintf("Permission '%s' denied on resource '//networksecurity.googleapis.com/%s' (or it may not exist).", permission, resource),
		Details: []any{map[string]any{
			"@type":    "type.googleapis.com/google.rpc.ErrorInfo",
			"reason":   "IAM_PERMISSION_DENIED",
			"domain":   "iam.googleapis.com",
			"metadata": map[string]any{"permission": permission, "resource": resource},
		}}}
}

// RPCFrom turns any error into an RPCError: compute-style errors (from
// authentication, fields=, injected faults and shared validation) keep
// their code and message and get the status that goes with the code.
func RPCFrom(err error) *RPCError {
	switch e := err.(type) {
	case *RPCError:
		return e
	case *Error:
		status := e.Status
		if status == "" {
			status = rpcStatuses[e.Code]
		}
		if status == "" {
			status = "UNKNOWN"
		}
		return &RPCError{Code: e.Code, Status: status, Message: e.Message, RetryAfter: e.RetryAfter}
	default:
		return &RPCError{Code: 500, Status: "INTERNAL", Message: err.Error()}
	}
}

// An RPCWriter marks a response as one of a newer API, so that the shared
// request handling (authentication, grants, fields=, faults) answers its
// errors in that API's format (see WriteError).
type RPCWriter struct{ http.ResponseWriter }

// WriteRPC writes err in the newer APIs' format.
func WriteRPC(w http.ResponseWriter, err error) {
	e := RPCFrom(err)
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Code == 401 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/"`)
	}
	body := map[string]any{"code": e.Code, "message": e.Message, "status": e.Status}
	if len(e.Details) > 0 {
		body["details"] = e.Details
	}
	WriteJSON(w, e.Code, map[string]any{"error": body})
}
