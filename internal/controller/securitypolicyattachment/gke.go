package securitypolicyattachment

import (
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// TypeGKEManaged is the condition that warns that GKE manages the target
// and may set its policy field back on its next sync: set, True, only for
// such a target. It is information; the attachment still writes.
const TypeGKEManaged xpv2.ConditionType = "GKEManaged"

// Reasons of the GKEManaged condition.
const (
	// ReasonGKEIngress: GKE's Ingress controller made the backend service
	// (names k8s1-…, for container-native load balancing, or k8s-be-…).
	ReasonGKEIngress xpv2.ConditionReason = "GKEIngress"
	// ReasonGKEGateway: GKE's Gateway controller made it (gkegw1-…).
	ReasonGKEGateway xpv2.ConditionReason = "GKEGateway"
	// ReasonGKE: its description is GKE's (kubernetes.io/ keys), its name
	// says neither.
	ReasonGKE xpv2.ConditionReason = "GKE"
)

// gkeCondition is the GKEManaged condition of a target GKE manages, and
// false for any other target. GKE names the backend services it makes and
// writes the Service they serve into their description as JSON
// ({"kubernetes.io/service-name":"ns/name","kubernetes.io/service-port":"80"}).
func gkeCondition(field string, key gcp.TargetKey, t *gcp.Target) (xpv2.Condition, bool) {
	svc := gkeService(t.Description)
	var reason xpv2.ConditionReason
	switch {
	case key.Bucket:
		return xpv2.Condition{}, false
	case strings.HasPrefix(t.Name, "gkegw1-"):
		reason = ReasonGKEGateway
	case strings.HasPrefix(t.Name, "k8s1-"), strings.HasPrefix(t.Name, "k8s-be-"):
		reason = ReasonGKEIngress
	case svc != "" || strings.Contains(t.Description, `"kubernetes.io/`):
		reason = ReasonGKE
	default:
		return xpv2.Condition{}, false
	}
	what := "its Service"
	if svc != "" {
		what = "Service " + svc
	}
	var use string
	switch reason {
	case ReasonGKEIngress:
		use = fmt.Sprintf("GKE's Ingress controller manages %s and may set its %s back to what the BackendConfig of %s says at its next sync. "+
			"Attach through GKE instead: set securityPolicy.name in that BackendConfig (the Service's cloud.google.com/backend-config annotation names it)", key, field, what)
	case ReasonGKEGateway:
		use = fmt.Sprintf("GKE's Gateway controller manages %s and may set its %s back to what the GCPBackendPolicy of %s says at its next sync. "+
			"Attach through GKE instead: set default.securityPolicy in a GCPBackendPolicy whose targetRef names %s", key, field, what, what)
	default:
		use = fmt.Sprintf("GKE manages %s (its description names %s) and may set its %s back at its next sync. "+
			"Attach through GKE instead: a BackendConfig (Ingress) or a GCPBackendPolicy (Gateway) for it", key, what, field)
	}
	return xpv2.Condition{Type: TypeGKEManaged, Status: corev1.ConditionTrue, Reason: reason, Message: use, LastTransitionTime: metav1.Now()}, true
}

// gkeService is the namespace/name of the Service a GKE backend
// service's description names, or "".
func gkeService(description string) string {
	var d map[string]any
	if json.Unmarshal([]byte(description), &d) != nil {
		return ""
	}
	name, _ := d["kubernetes.io/service-name"].(string)
	if name == "" {
		return ""
	}
	if port, _ := d["kubernetes.io/service-port"].(string); port != "" {
		return name + " port " + port
	}
	return name
}
