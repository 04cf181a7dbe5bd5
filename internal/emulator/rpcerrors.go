package emulator

import (
	"fmt"
	"net/http"
	"strconv"
)

// An rpcError is an error in the format of Google's newer APIs, such as
// networksecurity v1: a google.rpc.Status as JSON,
// {"error": {"code", "message", "status", "details"}}, without compute's
// "errors" list. Every address group recording's 404 has this shape.
type rpcError struct {
	Code       int    // HTTP status code
	Status     string // google.rpc.Code name, e.g. NOT_FOUND
	Message    string
	Details    []any
	RetryAfter int // seconds, sent as Retry-After when > 0
}

func (e *rpcError) Error() string {
	return fmt.Sprintf("googleapi: Error %d: %s", e.Code, e.Message)
}

// rpcStatuses is the google.rpc.Code name GCP pairs with each HTTP status.
var rpcStatuses = map[int]string{
	400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
	409: "ALREADY_EXISTS", 412: "FAILED_PRECONDITION", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL",
	503: "UNAVAILABLE",
}

// rpcCodes are the google.rpc.Code numbers, used in an operation's error.
var rpcCodes = map[string]int{
	"INVALID_ARGUMENT": 3, "NOT_FOUND": 5, "ALREADY_EXISTS": 6, "PERMISSION_DENIED": 7,
	"RESOURCE_EXHAUSTED": 8, "FAILED_PRECONDITION": 9, "INTERNAL": 13, "UNAVAILABLE": 14,
	"UNAUTHENTICATED": 16,
}

// errRPCNotFound is the recorded 404 of networksecurity:
// "Resource 'projects/P/locations/global/addressGroups/N' was not found".
func errRPCNotFound(resource string) *rpcError {
	return &rpcError{Code: 404, Status: "NOT_FOUND", Message: fmt.Sprintf("Resource '%s' was not found", resource)}
}

// errRPCAlreadyExists is not recorded; its wording follows the recorded 404.
func errRPCAlreadyExists(resource string) *rpcError {
	return &rpcError{Code: 409, Status: "ALREADY_EXISTS", Message: fmt.Sprintf("Resource '%s' already exists", resource)}
}

func errRPCInvalid(format string, args ...any) *rpcError {
	return &rpcError{Code: 400, Status: "INVALID_ARGUMENT", Message: fmt.Sprintf(format, args...)}
}

func errRPCPrecondition(format string, args ...any) *rpcError {
	return &rpcError{Code: 400, Status: "FAILED_PRECONDITION", Message: fmt.Sprintf(format, args...)}
}

// errRPCForbidden is the usual IAM denial of Google's newer APIs: the
// permission, the resource as a full resource name, and an ErrorInfo.
func errRPCForbidden(permission, resource string) *rpcError {
	return &rpcError{Code: 403, Status: "PERMISSION_DENIED",
		Message: fmt.Sprintf("Permission '%s' denied on resource '//networksecurity.googleapis.com/%s' (or it may not exist).", permission, resource),
		Details: []any{map[string]any{
			"@type":    "type.googleapis.com/google.rpc.ErrorInfo",
			"reason":   "IAM_PERMISSION_DENIED",
			"domain":   "iam.googleapis.com",
			"metadata": map[string]any{"permission": permission, "resource": resource},
		}}}
}

// rpcFrom turns any error into an rpcError: compute-style errors (from
// authentication, fields=, injected faults and shared validation) keep
// their code and message and get the status that goes with the code.
func rpcFrom(err error) *rpcError {
	switch e := err.(type) {
	case *rpcError:
		return e
	case *apiError:
		status := e.Status
		if status == "" {
			status = rpcStatuses[e.Code]
		}
		if status == "" {
			status = "UNKNOWN"
		}
		return &rpcError{Code: e.Code, Status: status, Message: e.Message, RetryAfter: e.RetryAfter}
	default:
		return &rpcError{Code: 500, Status: "INTERNAL", Message: err.Error()}
	}
}

// An rpcWriter marks a response as one of a newer API, so that the shared
// request handling (authentication, grants, fields=, faults) answers its
// errors in that API's format (see writeError).
type rpcWriter struct{ http.ResponseWriter }

// writeRPC writes err in the newer APIs' format.
func writeRPC(w http.ResponseWriter, err error) {
	e := rpcFrom(err)
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
	writeJSON(w, e.Code, map[string]any{"error": body})
}
