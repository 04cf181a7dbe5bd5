// Package tenancy proves, by outcome, that tenants sharing one provider
// process cannot reach each other's Cloud Armor policies through it. It runs
// on the real node `make test` boots (test/framework/platform): the provider
// is the pod Crossplane installed from our package, with only the permissions
// Crossplane's RBAC manager and cluster/rbac/provider-runtime.yaml give it,
// and the Cloud Armor emulator has per-token project grants: token-a may use
// proj-a only, token-b proj-b only, and the platform's token-shared both.
//
// Each subtest of TestTenancy proves one promise by what the cluster and GCP
// (the emulator) end up holding:
//
//   - ReadsDoNotLeak: an Observe-only object whose credentials may not read a
//     policy gets GCP's 403 and no data, while another tenant's object reads
//     that policy through the same process.
//   - ClaimsAreNamespaceScoped: a SecurityPolicyRule from a namespace the
//     owning SecurityPolicy does not admit (spec.allowedRules) writes
//     nothing, and is reported on both objects; opened with from: All, the
//     same claim wins the priority.
//   - OnePolicyOwner / OneRuleOwner: of two objects for one GCP policy (or
//     one rule), the oldest owns it; the other makes no GCP call at all, not
//     even a read, and its deletion leaves the GCP object in place.
//   - OwnerLabel: a GCP policy labelled for another owner is refused and left
//     untouched; an unlabelled one is adopted and labelled.
//   - AmbientCredentialsAdmission: a namespaced ProviderConfig may not use
//     the provider's own identity; a ClusterProviderConfig may.
//   - NamespaceSelector: a ClusterProviderConfig serves only the namespaces
//     its namespaceSelector admits, and makes no GCP call for the others.
//   - AttachmentNamespaceSelector, AttachmentOneOwner,
//     AttachmentPolicyRefStaysInNamespace: a SecurityPolicyAttachment in a
//     namespace its config does not admit is refused, makes no GCP call and
//     owns nothing even when created first; of two tenants' attachments of
//     one field the older writes, and the younger neither writes nor detaches
//     when deleted; securityPolicyRef resolves in the attachment's own
//     namespace only.
//   - RemoteSecretStaysInNamespace, RemoteIdentityStaysInNamespace,
//     RemoteCredentialsNeverShown: an AddressSet reads a remote cluster's
//     kubeconfig Secret from its own namespace only, and identity
//     ProviderConfig uses only a ProviderConfig of that namespace (never a
//     ClusterProviderConfig's token, sent to a server the namespace names);
//     a remote cluster's token reaches its server and no status, event or
//     log line.
//   - RemoteReach, RemoteEndlessList: a remote cluster on loopback,
//     link-local, a Service address or the cluster's own API server is
//     refused, and so are http, insecure-skip-tls-verify and proxy-url, each
//     saying why, while the tenant's servers receive nothing; an endless Node
//     list is cut at the provider's bound of bytes per response, named on
//     the AddressSet.
//   - InstancesStayInNamespace: an instance source lists only as its
//     namespace may: GCP's 403 for another tenant's project and none of its
//     addresses; a ClusterProviderConfig that does not admit the namespace
//     makes no call for it.
//   - NATStaysInNamespace: a Cloud NAT source naming a project its
//     ClusterProviderConfig may not name is refused before any GCP call, and
//     holds none of that project's addresses.
//   - NamespaceSourcesStayInNamespace: an AddressSet's services, object and
//     configMap sources read their own namespace only (another tenant's
//     ConfigMap of the same name is never read), Services only once the
//     platform grants them, and never a Secret.
//
// "No GCP call at all" is measured by pointing the refused objects'
// ClusterProviderConfigs at a counting reverse proxy in front of the
// emulator: every request they could make passes through it, and the same
// proxy counts the calls of the objects that are admitted (a positive
// control that the proxy sees them). Skipped with -short.
package tenancy

import (
	"flag"
	"os"
	"testing"
)

func TestMain(m *testing.M) {
	flag.Parse()
	// The scenarios spend their time waiting for the provider's polls, not
	// computing: run them all at once unless -parallel says otherwise (its
	// default, GOMAXPROCS, is 2 on a 2-core machine, which doubles the run).
	set := false
	flag.Visit(func(f *flag.Flag) { set = set || f.Name == "test.parallel" })
	if !set {
		_ = flag.Set("test.parallel", "8")
	}
	os.Exit(m.Run())
}
