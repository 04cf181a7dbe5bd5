package emulator

import (
	"net/http"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// validateOnlyMethods are the methods whose request has a validateOnly
// parameter in compute v1's discovery document. PATCH of a policy, delete,
// removeRule and setLabels have none, nor has any method of organization
// policies, backend services, backend buckets, routers or addresses.
var validateOnlyMethods = core.Set(
	"securityPolicies.insert", "securityPolicies.addRule", "securityPolicies.patchRule",
	"regionSecurityPolicies.insert", "regionSecurityPolicies.addRule", "regionSecurityPolicies.patchRule",
	"networkEdgeSecurityServices.insert")

// dryRunCollections are the collections whose methods refuse a validateOnly
// they do not have.
var dryRunCollections = core.Set("securityPolicies", "regionSecurityPolicies", "organizationSecurityPolicies",
	"backendServices", "regionBackendServices", "backendBuckets", "networkEdgeSecurityServices", "routers", "addresses")

// dryRunName is the name a validateOnly call is counted under in Stats, so
// that a test counting writes does not count dry runs.
func dryRunName(method string) string { return method + "?validateOnly" }

// validateOnlyParam reads ?validateOnly=. A method of dryRunCollections that
// has no such parameter is refused the way Google's front end refuses any
// unknown query parameter, rather than ignoring it: a client that believes
// it asked for a dry run must never get a write.
func validateOnlyParam(r *http.Request, method string) (bool, error) {
	q := r.URL.Query()
	if !q.Has("validateOnly") || !isPolicyMethod(method) {
		return false, nil
	}
	if !validateOnlyMethods[method] {
		return false, core.ErrPayload(`Invalid JSON payload received. Unknown name "validateOnly": Cannot bind query parameter. ` +
			`Field 'validateOnly' could not be found in request message.`)
	}
	switch v := q.Get("validateOnly"); v {
	case "true":
		return true, nil
	case "false":
		return false, nil
	default:
		return false, core.ErrPayload(`Invalid value at 'validate_only' (TYPE_BOOL), "` + v + `"`)
	}
}

func isPolicyMethod(method string) bool {
	collection, _, _ := strings.Cut(method, ".")
	return dryRunCollections[collection]
}
