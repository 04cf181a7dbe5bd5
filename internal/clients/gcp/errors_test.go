package gcp

import (
	"context"
	"net"
	"net/url"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

var errBoom = errors.New("boom")

func apiErr(code int, reason, msg string) *googleapi.Error {
	e := &googleapi.Error{Code: code, Message: msg}
	if reason != "" {
		e.Errors = []googleapi.ErrorItem{{Reason: reason, Message: msg}}
	}
	return e
}

func TestKind(t *testing.T) {
	cases := map[string]struct {
		reason string
		err    error
		want   ErrorKind
	}{
		"Nil": {
			reason: "A nil error has no kind.",
			want:   KindUnknown,
		},
		"NotFound": {
			reason: "A 404 is NotFound.",
			err:    apiErr(404, "notFound", "The resource 'projects/p/global/securityPolicies/n' was not found"),
			want:   KindNotFound,
		},
		"MissingRulePriority": {
			reason: "GCP's 400 for a missing rule priority is NotFound.",
			err:    apiErr(400, "invalid", "Invalid value for field 'priority': '5'. The security policy does not contain a rule at priority 5."),
			want:   KindNotFound,
		},
		"DuplicatePriority": {
			reason: "GCP's 400 for addRule at a taken priority is AlreadyExists: the rule is there.",
			err:    apiErr(400, "invalid", "Invalid value for field 'resource.priority': '5'. Cannot have rules with the same priorities."),
			want:   KindAlreadyExists,
		},
		"WrappedNotFound": {
			reason: "Classification looks through wrapping.",
			err:    errors.Wrap(apiErr(404, "notFound", "gone"), "cannot get policy"),
			want:   KindNotFound,
		},
		"AlreadyExists": {
			reason: "A 409 alreadyExists is AlreadyExists.",
			err:    apiErr(409, "alreadyExists", "The resource 'projects/p/global/securityPolicies/n' already exists"),
			want:   KindAlreadyExists,
		},
		"ConflictNotReady": {
			reason: "A 409 resourceNotReady is NotReady.",
			err:    apiErr(409, "resourceNotReady", "The resource is not ready"),
			want:   KindNotReady,
		},
		"ConflictOther": {
			reason: "Any other 409 is a concurrent operation: NotReady.",
			err:    apiErr(409, "conflict", "operation in progress"),
			want:   KindNotReady,
		},
		"BadRequestNotReady": {
			reason: "A 400 resourceNotReady is NotReady, not Invalid.",
			err:    apiErr(400, "resourceNotReady", "The resource 'projects/p/global/securityPolicies/n' is not ready"),
			want:   KindNotReady,
		},
		"BadRequestNotReadyMessage": {
			reason: "A 400 saying 'is not ready' is NotReady even without the reason.",
			err:    apiErr(400, "", "The resource 'projects/p/global/securityPolicies/n' is not ready"),
			want:   KindNotReady,
		},
		"PreconditionFailed": {
			reason: "A 412 is a stale fingerprint.",
			err:    apiErr(412, "conditionNotMet", "Labels fingerprint either invalid or resource labels have changed"),
			want:   KindPreconditionFailed,
		},
		"TooManyRequests": {
			reason: "A 429 is RateLimited.",
			err:    apiErr(429, "rateLimitExceeded", "slow down"),
			want:   KindRateLimited,
		},
		"ForbiddenRateLimit": {
			reason: "A 403 rateLimitExceeded is RateLimited.",
			err:    apiErr(403, "rateLimitExceeded", "Rate Limit Exceeded"),
			want:   KindRateLimited,
		},
		"ForbiddenUserRateLimit": {
			reason: "A 403 userRateLimitExceeded is RateLimited.",
			err:    apiErr(403, "userRateLimitExceeded", "User Rate Limit Exceeded"),
			want:   KindRateLimited,
		},
		"ForbiddenQuota": {
			reason: "A 403 quotaExceeded is QuotaExceeded.",
			err:    apiErr(403, "quotaExceeded", "Quota exceeded"),
			want:   KindQuotaExceeded,
		},
		"Forbidden": {
			reason: "Any other 403 is PermissionDenied.",
			err:    apiErr(403, "forbidden", "Required 'compute.securityPolicies.get' permission"),
			want:   KindPermissionDenied,
		},
		"Invalid": {
			reason: "Any other 400 is Invalid.",
			err:    apiErr(400, "invalid", "Invalid value for field 'resource.match.config.srcIpRanges': '11'. Maximum number of src_ip_ranges allowed is 10."),
			want:   KindInvalid,
		},
		"ServerError": {
			reason: "A 503 is Transient.",
			err:    apiErr(503, "backendError", "Backend Error"),
			want:   KindTransient,
		},
		"NetError": {
			reason: "A network error is Transient.",
			err:    &url.Error{Op: "Get", URL: "http://x", Err: &net.OpError{Op: "dial", Err: errBoom}},
			want:   KindTransient,
		},
		"Deadline": {
			reason: "A timeout is Transient.",
			err:    errors.Wrap(context.DeadlineExceeded, "cannot get policy"),
			want:   KindTransient,
		},
		"Canceled": {
			reason: "A cancelled context is not GCP's doing.",
			err:    context.Canceled,
			want:   KindUnknown,
		},
		"Other": {
			reason: "An unknown error is Unknown.",
			err:    errBoom,
			want:   KindUnknown,
		},
		"OperationQuota": {
			reason: "QUOTA_EXCEEDED inside an operation is QuotaExceeded.",
			err:    &OperationError{Errors: []OperationErrorItem{{Code: "QUOTA_EXCEEDED", Message: "Quota exceeded."}}},
			want:   KindQuotaExceeded,
		},
		"OperationNotReady": {
			reason: "RESOURCE_NOT_READY inside an operation is NotReady.",
			err:    &OperationError{Errors: []OperationErrorItem{{Code: "RESOURCE_NOT_READY"}}},
			want:   KindNotReady,
		},
		"OperationNotFound": {
			reason: "RESOURCE_NOT_FOUND inside an operation is NotFound.",
			err:    &OperationError{Errors: []OperationErrorItem{{Code: "RESOURCE_NOT_FOUND"}}},
			want:   KindNotFound,
		},
		"OperationHTTPStatus": {
			reason: "An unknown code falls back on the operation's HTTP status.",
			err:    &OperationError{HTTPStatusCode: 503, Errors: []OperationErrorItem{{Code: "SOMETHING_NEW"}}},
			want:   KindTransient,
		},
		"OperationInvalidCode": {
			reason: "An INVALID_* code without an HTTP status is Invalid.",
			err:    &OperationError{Errors: []OperationErrorItem{{Code: "INVALID_FIELD_VALUE"}}},
			want:   KindInvalid,
		},
		"Pending": {
			reason: "An operation we stopped waiting for is NotReady.",
			err:    &OperationPendingError{Operation: "op"},
			want:   KindNotReady,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Kind(tc.err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nKind(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestIsFunctions(t *testing.T) {
	type want struct{ notFound, exists, quota bool }
	cases := map[string]struct {
		reason string
		err    error
		want   want
	}{
		"NotFound": {
			reason: "Only IsNotFound reports a 404.",
			err:    apiErr(404, "notFound", "gone"),
			want:   want{notFound: true},
		},
		"MissingRule": {
			reason: "A wrapped 400 naming a missing rule priority is NotFound.",
			err:    errors.Wrap(apiErr(400, "invalid", "The security policy does not contain a rule at priority 5."), "cannot remove rule"),
			want:   want{notFound: true},
		},
		"AlreadyExists": {
			reason: "Only IsAlreadyExists reports a 409 alreadyExists.",
			err:    apiErr(409, "alreadyExists", "exists"),
			want:   want{exists: true},
		},
		"Quota": {
			reason: "An operation's QUOTA_EXCEEDED is KindQuotaExceeded, neither NotFound nor AlreadyExists.",
			err:    &OperationError{Errors: []OperationErrorItem{{Code: "QUOTA_EXCEEDED"}}},
			want:   want{quota: true},
		},
		"Nil": {
			reason: "A nil error is none of them.",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := want{notFound: IsNotFound(tc.err), exists: IsAlreadyExists(tc.err), quota: Kind(tc.err) == KindQuotaExceeded}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nIs*(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestErrorKindString(t *testing.T) {
	cases := map[string]struct {
		reason string
		kind   ErrorKind
		want   string
	}{
		"NotReady":   {reason: "Known kinds have CamelCase names.", kind: KindNotReady, want: "NotReady"},
		"Transient":  {reason: "The last kind is named too.", kind: KindTransient, want: "Transient"},
		"OutOfRange": {reason: "Unknown values still print.", kind: ErrorKind(99), want: "ErrorKind(99)"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.kind.String()); diff != "" {
				t.Errorf("\n%s\nString(): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOperationError(t *testing.T) {
	type want struct {
		msg  string
		kind ErrorKind
	}
	cases := map[string]struct {
		reason string
		op     *compute.Operation
		want   want
	}{
		"Quota": {
			reason: "GCP's message is shown verbatim, two spaces included.",
			op: &compute.Operation{Name: "op-1", Error: &compute.OperationError{Errors: []*compute.OperationErrorErrors{
				{Code: "QUOTA_EXCEEDED", Message: "Quota 'SECURITY_POLICY_RULES' exceeded.  Limit: 0.0 globally."},
			}}},
			want: want{msg: "QUOTA_EXCEEDED: Quota 'SECURITY_POLICY_RULES' exceeded.  Limit: 0.0 globally.", kind: KindQuotaExceeded},
		},
		"Several": {
			reason: "Several entries are joined in order.",
			op: &compute.Operation{Name: "op-2", Error: &compute.OperationError{Errors: []*compute.OperationErrorErrors{
				{Code: "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE", Message: "The security_policy resource 'p' is already being used by 'b'"},
				{Code: "OTHER"},
			}}},
			want: want{msg: "RESOURCE_IN_USE_BY_ANOTHER_RESOURCE: The security_policy resource 'p' is already being used by 'b'; OTHER", kind: KindInvalid},
		},
		"HTTPOnly": {
			reason: "An operation with only httpErrorStatusCode still fails.",
			op:     &compute.Operation{Name: "op-3", HttpErrorStatusCode: 404, HttpErrorMessage: "NOT FOUND"},
			want:   want{msg: "NOT FOUND", kind: KindNotFound},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			oe := NewOperationError(tc.op)
			got := want{msg: oe.Error(), kind: Kind(oe)}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(want{}), test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nNewOperationError(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
	t.Run("Success", func(t *testing.T) {
		if oe := NewOperationError(&compute.Operation{Status: "DONE"}); oe != nil {
			t.Errorf("NewOperationError(success): want nil, got %v", oe)
		}
	})
}
