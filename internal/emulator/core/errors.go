package core

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// An Error is an error that is ready to be written as Google's JSON error
// envelope. Store and validation code return these so that the mapping from a
// failure to an HTTP status lives in exactly one place (WriteError).
type Error struct {
	Code    int    // HTTP status code
	Reason  string // errors[0].reason, e.g. notFound
	Message string
	Domain  string // errors[0].domain; "global" unless set
	Status  string // ESF-level status (UNAUTHENTICATED, ...); only ESF errors carry it

	// Location fields are only used by ESF auth errors.
	Location     string
	LocationType string
	// ItemMessage overrides errors[0].message (ESF auth errors use a short one).
	ItemMessage string
	// RetryAfter, when > 0, is sent as a Retry-After header (seconds).
	RetryAfter int
}

func (e *Error) Error() string {
	return fmt.Sprintf("googleapi: Error %d: %s, %s", e.Code, e.Message, e.Reason)
}

// ErrNotFound is the recorded 404 (R1, R3): message repeated in errors[0].
func ErrNotFound(resource string) *Error {
	return &Error{Code: 404, Reason: "notFound",
		Message: fmt.Sprintf("The resource '%s' was not found", resource)}
}

// ErrForbidden is compute's answer when IAM denies the permission a method
// needs, e.g. "Required 'compute.securityPolicies.get' permission for
// 'projects/p/global/securityPolicies/n'".
func ErrForbidden(permission, resource string) *Error {
	return &Error{Code: 403, Reason: "forbidden",
		Message: fmt.Sprintf("Required '%s' permission for '%s'", permission, resource)}
}

func ErrAlreadyExists(resource string) *Error {
	return &Error{Code: 409, Reason: "alreadyExists",
		Message: fmt.Sprintf("The resource '%s' already exists", resource)}
}

// ErrInUse is compute's refusal of a change that would take away, or take
// over, a resource another one uses: kind is how GCP's message names it
// ("address", "security_policy"), resource and user are paths.
func ErrInUse(kind, resource, user string) *Error {
	return &Error{Code: 400, Reason: "resourceInUseByAnotherResource",
		Message: fmt.Sprintf("The %s resource '%s' is already being used by '%s'", kind, resource, user)}
}

// ErrNotReady is what compute returns when a resource has an operation in
// flight and another mutation arrives.
func ErrNotReady(resource string) *Error {
	return &Error{Code: 400, Reason: "resourceNotReady",
		Message: fmt.Sprintf("The resource '%s' is not ready", resource)}
}

// ErrInvalidField formats compute's usual "Invalid value for field" message.
func ErrInvalidField(field, value, detail string) *Error {
	msg := fmt.Sprintf("Invalid value for field '%s': '%s'.", field, value)
	if detail != "" {
		msg += " " + detail
	}
	return &Error{Code: 400, Reason: "invalid", Message: msg}
}

// ErrParse is what the Google front end (ESF) answers for a body that is not
// JSON at all.
func ErrParse(detail string) *Error {
	return &Error{Code: 400, Reason: "parseError", Status: "INVALID_ARGUMENT",
		Message: "Invalid JSON payload received. " + detail}
}

// ErrPayload is ESF's answer for JSON that does not fit the schema (unknown
// names, wrong types, too large).
func ErrPayload(msg string) *Error {
	return &Error{Code: 400, Reason: "invalid", Status: "INVALID_ARGUMENT", Message: msg}
}

// AuthHelp ends the messages of the 401s.
const AuthHelp = "Expected OAuth 2 access token, login cookie or other valid authentication credential. " +
	"See https://developers.google.com/identity/sign-in/web/devconsole-project."

func ErrUnauthenticated() *Error {
	return &Error{Code: 401, Reason: "required", Status: "UNAUTHENTICATED",
		Message:     "Request is missing required authentication credential. " + AuthHelp,
		ItemMessage: "Login Required.", Location: "Authorization", LocationType: "header"}
}

func ErrBadCredentials() *Error {
	return &Error{Code: 401, Reason: "authError", Status: "UNAUTHENTICATED",
		Message:     "Request had invalid authentication credentials. " + AuthHelp,
		ItemMessage: "Invalid Credentials", Location: "Authorization", LocationType: "header"}
}

// ErrInjected builds the bodies GCP sends for throttling and backend trouble;
// only used by fault injection.
func ErrInjected(code, retryAfter int) *Error {
	switch code {
	case 429:
		return &Error{Code: 429, Reason: "rateLimitExceeded", Domain: "usageLimits",
			Status: "RESOURCE_EXHAUSTED", RetryAfter: retryAfter,
			Message: "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'compute.googleapis.com'."}
	case 503:
		return &Error{Code: 503, Reason: "backendError", Status: "UNAVAILABLE",
			Message: "The service is currently unavailable."}
	default:
		return &Error{Code: code, Reason: "backendError",
			Message: "Internal error. Please try again or contact Google Support."}
	}
}

type errorItem struct {
	Domain       string `json:"domain"`
	Message      string `json:"message"`
	Reason       string `json:"reason"`
	Location     string `json:"location,omitempty"`
	LocationType string `json:"locationType,omitempty"`
}

type errorBody struct {
	Code    int         `json:"code"`
	Message string      `json:"message"`
	Errors  []errorItem `json:"errors"`
	Status  string      `json:"status,omitempty"`
}

// WriteError is the only writer of compute's error envelope. Anything that is
// not an *Error is reported as a 500 backendError. An *RPCError, and any
// error on an RPCWriter, is written in the newer APIs' format (WriteRPC).
func WriteError(w http.ResponseWriter, err error) {
	if _, rpc := err.(*RPCError); rpc {
		WriteRPC(w, err)
		return
	}
	if _, rpc := w.(RPCWriter); rpc {
		WriteRPC(w, err)
		return
	}
	e, ok := err.(*Error)
	if !ok {
		e = &Error{Code: 500, Reason: "backendError", Message: err.Error()}
	}
	item := errorItem{Domain: e.Domain, Message: e.Message, Reason: e.Reason,
		Location: e.Location, LocationType: e.LocationType}
	if item.Domain == "" {
		item.Domain = "global"
	}
	if e.ItemMessage != "" {
		item.Message = e.ItemMessage
	}
	if e.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(e.RetryAfter))
	}
	if e.Code == 401 {
		w.Header().Set("WWW-Authenticate", `Bearer realm="https://accounts.google.com/"`)
	}
	body := map[string]errorBody{"error": {Code: e.Code, Message: e.Message,
		Errors: []errorItem{item}, Status: e.Status}}
	WriteJSON(w, e.Code, body)
}

// WriteJSON writes v with the Content-Type real GCP uses.
func WriteJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = 500, []byte(`{"error":{"code":500,"message":"cannot encode response","errors":[{"domain":"global","message":"cannot encode response","reason":"backendError"}]}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
