package argocd

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestHealthOfAttachment checks the verdict on a SecurityPolicyAttachment:
// Healthy once GCP's field names its policy (a GKEManaged warning is
// information and changes nothing), Progressing while its target does not
// exist, Degraded with why when another writer sets the field back (while
// it waits to write again, and once it stopped: Contested) or an older
// attachment owns the field.
func TestHealthOfAttachment(t *testing.T) {
	script, err := healthScript()
	if err != nil {
		t.Fatal(err)
	}
	ready := cond("Ready", "True", "Available", "")
	synced := cond("Synced", "True", "ReconcileSuccess", "")
	gke := cond("GKEManaged", "True", "GKEIngress", "GKE's Ingress controller manages projects/p/global/backendServices/k8s1-abc and may set its securityPolicy back")
	noTarget := "GCP has no projects/p/global/backendServices/web: the policy is attached once it exists"
	waiting := "cannot observe external resource: another writer set securityPolicy of projects/p/global/backendServices/web back to " +
		"projects/p/global/securityPolicies/other after this object set it (1 times within the window): this object sets it again at 2026-11-28T12:00:13Z, and stops writing it after 3"
	contested := "cannot observe external resource: contested: another writer set securityPolicy of projects/p/global/backendServices/web back 3 times " +
		"after this object set it, last at 2026-11-28T12:01:00Z, to projects/p/global/securityPolicies/other: this object writes it no more"
	owned := "cannot observe external resource: the securityPolicy of projects/p/global/backendServices/web is managed by SecurityPolicyAttachment team-a/web, the oldest object for it"
	cases := map[string]struct {
		reason string
		conds  []map[string]any
		want   health
	}{
		"Attached": {reason: "An attachment whose field names its policy is Healthy.",
			conds: []map[string]any{ready, synced}, want: health{Status: "Healthy", Message: "Available"}},
		"AttachedToGKEBackend": {reason: "The GKEManaged warning is information: still Healthy.",
			conds: []map[string]any{ready, synced, gke}, want: health{Status: "Healthy", Message: "Available"}},
		"NoTarget": {reason: "A target GCP does not have yet: Progressing, saying which.",
			conds: []map[string]any{synced, cond("Ready", "False", "Unavailable", noTarget)}, want: health{Status: "Progressing", Message: noTarget}},
		"SetBack": {reason: "Set back by another writer, waiting to write again: Degraded, saying when.",
			conds: []map[string]any{cond("Synced", "False", "ReconcileError", waiting), cond("Ready", "False", "Unavailable", "")},
			want:  health{Status: "Degraded", Message: waiting}},
		"Contested": {reason: "Contested: Degraded with what GCP holds, how often and when it was set back.",
			conds: []map[string]any{cond("Synced", "False", "ReconcileError", contested), cond("Contested", "True", "Contested", contested)},
			want:  health{Status: "Degraded", Message: contested}},
		"Outranked": {reason: "An attachment of a field an older one owns is Degraded, naming the owner.",
			conds: []map[string]any{cond("Synced", "False", "ReconcileError", owned)}, want: health{Status: "Degraded", Message: owned}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := evalHealth(script, object("SecurityPolicyAttachment", tc.conds...))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nhealth: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
