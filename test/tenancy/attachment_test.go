package tenancy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// attachment is a SecurityPolicyAttachment of backend service backend in
// namespace ns through ClusterProviderConfig config, naming its policy by
// policy (a securityPolicy, securityPolicyRef or securityPolicySelector line).
func attachment(ns, name, config, policy, backend string) string {
	return fmt.Sprintf(`apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: SecurityPolicyAttachment
metadata: {name: %s, namespace: %s}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: %s}
  forProvider:
    %s
    target: {kind: BackendService, name: %s}
    field: securityPolicy`, name, ns, config, policy, backend)
}

// backendService makes a global backend service in project, as gcloud
// would, and the policies named, for attachments to name.
func (s *suite) backendService(t *testing.T, project, name string, policies ...string) {
	t.Helper()
	for _, p := range policies {
		s.insert(t, project, &compute.SecurityPolicy{Name: p, Type: "CLOUD_ARMOR"})
	}
	op, err := s.gcp.BackendServices.Insert(project, &compute.BackendService{Name: name, LoadBalancingScheme: "EXTERNAL_MANAGED"}).Do()
	if err == nil {
		err = gcp.WaitForOperation(context.Background(), s.gcp, project, "", op)
	}
	if err != nil {
		t.Fatalf("insert backend service %s: %v", name, err)
	}
}

// fieldIs is a condition: the securityPolicy of project's backend service
// names policy ("" for none).
func (s *suite) fieldIs(project, backend, policy string) func() error {
	return func() error {
		b, err := s.gcp.BackendServices.Get(project, backend).Do()
		if err != nil {
			return err
		}
		want := ""
		if policy != "" {
			want = policyPath(project, policy)
		}
		if got := gcp.RelativeName(b.SecurityPolicy); got != want {
			return fmt.Errorf("backend service %s's securityPolicy is %q, want %q", backend, got, want)
		}
		return nil
	}
}

// noBackendCalls is a condition: the counting proxy saw no request for
// project's backend service.
func (s *suite) noBackendCalls(project, backend string) func() error {
	return func() error {
		if c := s.proxy.CallsTo("/projects/" + project + "/global/backendServices/" + backend); len(c) > 0 {
			return fmt.Errorf("%d GCP calls for backend service %s through the refused attachment's config: %v", len(c), backend, c)
		}
		return nil
	}
}

// testAttachmentNamespaceSelector: an attachment in a namespace its
// ClusterProviderConfig does not admit is refused and makes no GCP call
// (its endpoint is the counting proxy). Created first, it owns nothing: a
// tenant cannot hold another's field by naming it before them, and the
// admitted tenant's younger attachment attaches.
func (s *suite) testAttachmentNamespaceSelector(t *testing.T) {
	s.backendService(t, projA, "att-gated", "att-gated-a", "att-gated-b")
	squat := s.create(t, attachment("tenant-b", "att-gated", cpcTenantAOnly, "securityPolicy: att-gated-b", "att-gated"))
	refused := s.syncedFalse(squat, `ClusterProviderConfig "tenant-a-only" does not admit namespace "tenant-b"`)
	s.Eventually(t, settle, "tenant-b/att-gated refused", refused)
	s.holds(t, window, "tenant-b's attachment refused, making no GCP call", all(refused,
		s.fieldIs(projA, "att-gated", ""), s.noBackendCalls(projA, "att-gated")))

	time.Sleep(time.Second) // a creation time strictly later than the squatter's
	admitted := s.create(t, attachment("tenant-a", "att-gated", cpcTenantAOnly, "securityPolicy: att-gated-a", "att-gated"))
	s.Eventually(t, settle, "tenant-a's younger attachment to attach", all(s.ready(admitted), s.fieldIs(projA, "att-gated", "att-gated-a")))
	s.holds(t, window, "tenant-a's policy attached, tenant-b's refused", all(refused, s.fieldIs(projA, "att-gated", "att-gated-a")))

	s.delete(t, admitted)
	s.Eventually(t, settle, "tenant-a's attachment gone, its policy detached", all(s.gone(admitted), s.fieldIs(projA, "att-gated", "")))
	s.delete(t, squat)
	s.Eventually(t, settle, "tenant-b's attachment gone", s.gone(squat))
}

// testAttachmentOneOwner: of two tenants' attachments of one field of one
// target in one project, the older writes; the younger, from another
// namespace, is refused naming the owner, never writes, and deleting it
// leaves the owner's policy attached.
func (s *suite) testAttachmentOneOwner(t *testing.T) {
	s.backendService(t, projA, "att-shared", "att-shared-a", "att-shared-b")
	owner := s.create(t, attachment("tenant-a", "att-shared", cpcShared, "securityPolicy: att-shared-a", "att-shared"))
	s.Eventually(t, settle, "tenant-a's attachment to attach", all(s.ready(owner), s.fieldIs(projA, "att-shared", "att-shared-a")))

	// Through the counting proxy: the refused attachment's every call would show.
	intruder := s.create(t, attachment("tenant-b", "att-shared", cpcWatched, "securityPolicy: att-shared-b", "att-shared"))
	refused := s.syncedFalse(intruder, "is managed by SecurityPolicyAttachment tenant-a/att-shared")
	s.Eventually(t, settle, "tenant-b's attachment refused", refused)
	s.holds(t, window, "tenant-b's attachment refused, writing nothing", all(refused,
		s.fieldIs(projA, "att-shared", "att-shared-a"), s.noBackendCalls(projA, "att-shared")))

	s.delete(t, intruder)
	s.Eventually(t, settle, "tenant-b's attachment gone", s.gone(intruder))
	s.holds(t, window, "tenant-a's policy still attached after tenant-b's attachment was deleted",
		all(s.ready(owner), s.fieldIs(projA, "att-shared", "att-shared-a"), s.noBackendCalls(projA, "att-shared")))

	s.delete(t, owner)
	s.Eventually(t, settle, "tenant-a's attachment gone, its policy detached", all(s.gone(owner), s.fieldIs(projA, "att-shared", "")))
}

// testAttachmentPolicyRefStaysInNamespace: securityPolicyRef is
// namespace-local. A reference naming another namespace is refused at
// admission; one without a namespace resolves in the attachment's own
// namespace only, so tenant-b never attaches tenant-a's SecurityPolicy and
// the target's field stays as it was.
func (s *suite) testAttachmentPolicyRefStaysInNamespace(t *testing.T) {
	s.backendService(t, projA, "att-ref")
	policy := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: att-ref-a, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: default}
  forProvider: {description: tenant-a's policy}`)
	s.Eventually(t, settle, "tenant-a/att-ref-a Ready", s.ready(policy))

	err := s.Admin.Create(context.Background(), decode(t, attachment("tenant-b", "att-ref-cross", cpcShared,
		"securityPolicyRef: {name: att-ref-a, namespace: tenant-a}", "att-ref")))
	if err == nil || !strings.Contains(err.Error(), "securityPolicyRef must name a SecurityPolicy in this object's namespace") {
		t.Errorf("an attachment referencing another namespace's policy: want admission to refuse it, got %v", err)
	}

	sameName := s.create(t, attachment("tenant-b", "att-ref", cpcShared, "securityPolicyRef: {name: att-ref-a}", "att-ref"))
	unresolved := s.syncedFalse(sameName, "cannot resolve references", `"att-ref-a" not found`)
	s.Eventually(t, settle, "tenant-b's reference left unresolved in its own namespace", unresolved)
	s.holds(t, window, "tenant-a's policy never attached by tenant-b", all(unresolved, s.fieldIs(projA, "att-ref", "")))

	s.delete(t, sameName)
	s.delete(t, policy)
	s.Eventually(t, settle, "deleted", all(s.gone(sameName), s.gone(policy)))
}

// setField sets the securityPolicy of project's backend service to policy,
// as gcloud would, outside Kubernetes.
func (s *suite) setField(t *testing.T, project, backend, policy string) {
	t.Helper()
	op, err := s.gcp.BackendServices.SetSecurityPolicy(project, backend, &compute.SecurityPolicyReference{SecurityPolicy: policyPath(project, policy)}).Do()
	if err == nil {
		err = gcp.WaitForOperation(context.Background(), s.gcp, project, "", op)
	}
	if err != nil {
		t.Fatalf("set the securityPolicy of %s: %v", backend, err)
	}
}

// testAttachmentUngrantedBackend: an attachment naming a backend service
// its ClusterProviderConfig grants its namespace no access to (another
// team's, set outside Kubernetes) is refused, says which grant to ask for,
// makes no GCP call (its endpoint is the counting proxy), and deleting it
// leaves the field as it was.
func (s *suite) testAttachmentUngrantedBackend(t *testing.T) {
	s.backendService(t, projA, "legacy-console", "legacy-console-armor", "legacy-console-b")
	s.setField(t, projA, "legacy-console", "legacy-console-armor")
	thief := s.create(t, attachment("tenant-b", "legacy-console", cpcWatched, "securityPolicy: legacy-console-b", "legacy-console"))
	refused := s.syncedFalse(thief, `ClusterProviderConfig "shared-watched" grants namespace "tenant-b" no BackendService named "legacy-console"`,
		`spec.attachmentGrants`)
	s.Eventually(t, settle, "tenant-b's attachment of an ungranted backend refused", refused)
	s.holds(t, window, "the ungranted attachment refused, making no GCP call", all(refused,
		s.fieldIs(projA, "legacy-console", "legacy-console-armor"), s.noBackendCalls(projA, "legacy-console")))
	s.delete(t, thief)
	s.Eventually(t, settle, "tenant-b's attachment gone", s.gone(thief))
	s.holds(t, window, "legacy-console's policy as it was", all(s.fieldIs(projA, "legacy-console", "legacy-console-armor"),
		s.noBackendCalls(projA, "legacy-console")))
}

// testAttachmentAdoptThenDelete: a tenant's attachment naming a backend
// service and the policy it already holds (set outside Kubernetes) is
// Ready without a write; deleting it leaves the policy attached: an
// attachment that never wrote clears nothing.
func (s *suite) testAttachmentAdoptThenDelete(t *testing.T) {
	s.backendService(t, projA, "att-adopt", "att-adopt-legacy")
	s.setField(t, projA, "att-adopt", "att-adopt-legacy")
	adopter := s.create(t, attachment("tenant-b", "att-adopt", cpcWatched, "securityPolicy: att-adopt-legacy", "att-adopt"))
	s.Eventually(t, settle, "tenant-b's attachment Ready without a write", all(s.ready(adopter), s.fieldIs(projA, "att-adopt", "att-adopt-legacy")))
	s.delete(t, adopter)
	s.Eventually(t, settle, "tenant-b's attachment gone", s.gone(adopter))
	s.holds(t, window, "att-adopt's policy still attached after the adopter was deleted", s.fieldIs(projA, "att-adopt", "att-adopt-legacy"))
}
