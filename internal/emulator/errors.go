package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
)

// An apiError is an error that is ready to be written as Google's JSON error
// envelope. Store and validation code return these so that the mapping from a
// failure to an HTTP status lives in exactly one place (writeError).
type apiError struct {
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

func (e *apiError) Error() string {
	return fmt.Sprintf("googleapi: Error %d: %s, %s", e.Code, e.Message, e.Reason)
}

// errNotFound is the recorded 404 (R1, R3): message repeated in errors[0].
func errNotFound(resource string) *apiError {
	return &apiError{Code: 404, Reason: "notFound",
		Message: fmt.Sprintf("The resource '%s' was not found", resource)}
}

// errForbidden is compute's answer when IAM denies the permission a method
// needs, e.g. "Required 'compute.securityPolicies.get' permission for
// 'projects/p/global/securityPolicies/n'".
func errForbidden(permission, resource string) *apiError {
	return &apiError{Code: 403, Reason: "forbidden",
		Message: fmt.Sprintf("Required '%s' permission for '%s'", permission, resource)}
}

func errAlreadyExists(resource string) *apiError {
	return &apiError{Code: 409, Reason: "alreadyExists",
		Message: fmt.Sprintf("The resource '%s' already exists", resource)}
}

// errNotReady is what compute returns when a resource has an operation in
// flight and another mutation arrives.
func errNotReady(resource string) *apiError {
	return &apiError{Code: 400, Reason: "resourceNotReady",
		Message: fmt.Sprintf("The resource '%s' is not ready", resource)}
}

// errInvalidField formats compute's usual "Invalid value for field" message.
func errInvalidField(field, value, detail string) *apiError {
	msg := fmt.Sprintf("Invalid value for field '%s': '%s'.", field, value)
	if detail != "" {
		msg += " " + detail
	}
	return &apiError{Code: 400, Reason: "invalid", Message: msg}
}

func errDuplicatePriority(p int64) *apiError {
	return errInvalidField("resource.priority", strconv.FormatInt(p, 10),
		"Cannot have rules with the same priorities.")
}

func errNoRule(p int64) *apiError {
	return errInvalidField("priority", strconv.FormatInt(p, 10),
		fmt.Sprintf("The security policy does not contain a rule at priority %d.", p))
}

func errFingerprint() *apiError {
	return &apiError{Code: 412, Reason: "conditionNotMet",
		Message: "Supplied fingerprint does not match current metadata fingerprint."}
}

func errLabelFingerprint() *apiError {
	return &apiError{Code: 412, Reason: "conditionNotMet",
		Message: "Labels fingerprint either invalid or resource labels have changed"}
}

// errParse is what the Google front end (ESF) answers for a body that is not
// JSON at all.
func errParse(detail string) *apiError {
	return &apiError{Code: 400, Reason: "parseError", Status: "INVALID_ARGUMENT",
		Message: "Invalid JSON payload received. " + detail}
}

// errPayload is ESF's answer for JSON that does not fit the schema (unknown
// names, wrong types, too large).
func errPayload(msg string) *apiError {
	return &apiError{Code: 400, Reason: "invalid", Status: "INVALID_ARGUMENT", Message: msg}
}

const authHelp = "Expected OAuth 2 access token, login cookie or other valid authentication credential. " +
	"See https://developers.google.com/identity/sign-in/web/devconsole-project."

func errUnauthenticated() *apiError {
	return &apiError{Code: 401, Reason: "required", Status: "UNAUTHENTICATED",
		Message:     "Request is missing required authentication credential. " + authHelp,
		ItemMessage: "Login Required.", Location: "Authorization", LocationType: "header"}
}

func errBadCredentials() *apiError {
	return &apiError{Code: 401, Reason: "authError", Status: "UNAUTHENTICATED",
		Message:     "Request had invalid authentication credentials. " + authHelp,
		ItemMessage: "Invalid Credentials", Location: "Authorization", LocationType: "header"}
}

// errInjected builds the bodies GCP sends for throttling and backend trouble;
// only used by fault injection.
func errInjected(code, retryAfter int) *apiError {
	switch code {
	case 429:
		return &apiError{Code: 429, Reason: "rateLimitExceeded", Domain: "usageLimits",
			Status: "RESOURCE_EXHAUSTED", RetryAfter: retryAfter,
			Message: "Quota exceeded for quota metric 'Queries' and limit 'Queries per minute' of service 'compute.googleapis.com'."}
	case 503:
		return &apiError{Code: 503, Reason: "backendError", Status: "UNAVAILABLE",
			Message: "The service is currently unavailable."}
	default:
		return &apiError{Code: code, Reason: "backendError",
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

// writeError is the only writer of compute's error envelope. Anything that is
// not an *apiError is reported as a 500 backendError. An *rpcError, and any
// error on an rpcWriter, is written in the newer APIs' format (writeRPC).
func writeError(w http.ResponseWriter, err error) {
	if _, rpc := err.(*rpcError); rpc {
		writeRPC(w, err)
		return
	}
	if _, rpc := w.(rpcWriter); rpc {
		writeRPC(w, err)
		return
	}
	e, ok := err.(*apiError)
	if !ok {
		e = &apiError{Code: 500, Reason: "backendError", Message: err.Error()}
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
	writeJSON(w, e.Code, body)
}

// writeJSON writes v with the Content-Type real GCP uses.
func writeJSON(w http.ResponseWriter, code int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		code, b = 500, []byte(`{"error":{"code":500,"message":"cannot encode response","errors":[{"domain":"global","message":"cannot encode response","reason":"backendError"}]}}`)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}
