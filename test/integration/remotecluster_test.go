package integration

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
	"github.com/armorplane/provider-cloudarmor/test/framework/controlplane"
	"github.com/armorplane/provider-cloudarmor/test/framework/kube"
)

// Tokens the second cluster's API server accepts (--token-auth-file): a
// kubeconfig's bearer token, and the access token a ProviderConfig holds, as
// a GKE API server accepts its Google identity's.
const (
	readerToken = "reader-token"
	googleToken = "ya29.fleet-token"
)

// fleet is the cluster the provider runs in (env) and a second cluster, with
// its own etcd and API server, whose Nodes an allowlist follows.
type fleet struct {
	*env
	remote *controlplane.ControlPlane
}

func startFleet(t *testing.T) *fleet {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	csv := readerToken + ",reader,1001\n" + googleToken + ",fleet-sa@it-project.iam.gserviceaccount.com,1002\n"
	if err := os.WriteFile(tokens, []byte(csv), 0o600); err != nil {
		t.Fatal(err)
	}
	remote := controlplane.StartT(t, controlplane.Options{Scheme: kube.SchemeT(t), APIServerFlags: map[string]string{"token-auth-file": tokens}})
	f := &fleet{env: startProvider(t, emulator.Options{}), remote: remote}
	f.grantNodeReaders(t, "reader", "fleet-sa@it-project.iam.gserviceaccount.com")
	return f
}

// grantNodeReaders lets users list and watch the second cluster's Nodes,
// and nothing else.
func (f *fleet) grantNodeReaders(t *testing.T, users ...string) {
	t.Helper()
	ctx := context.Background()
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "node-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch"}}}}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "node-reader"},
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "node-reader"}}
	for _, u := range users {
		binding.Subjects = append(binding.Subjects, rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: u})
	}
	for _, o := range []client.Object{role, binding} {
		if err := f.remote.Client.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRemoteClusterNodes runs an allowlist whose node source is a second
// cluster, read through a kubeconfig Secret: its Nodes coming, relabelled
// and going reach GCP; the second API server stopped holds the addresses and
// says why, started again resumes; a changed Secret is followed without a
// restart, a deleted one holds.
func TestRemoteClusterNodes(t *testing.T) {
	f := startFleet(t)
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		f.remoteNode(t, i, "web")
	}
	f.remoteNode(t, 4, "batch")
	f.putSecret(t, "eu-1", "kubeconfig", f.remote.Kubeconfig) // envtest's admin: a client certificate

	office := "203.0.113.0/26"
	al := &v1alpha1.SecurityPolicyAllowlist{
		ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "fleet"},
		Spec: v1alpha1.SecurityPolicyAllowlistSpec{
			SecurityPolicy: "fleet-allowlist", CreatePolicy: &v1alpha1.AllowlistPolicy{DefaultAction: "deny(403)"},
			PriorityRange: v1alpha1.AllowlistPriorityRange{First: 3000, Last: 3009},
			Sources: []v1alpha1.AllowlistSource{
				{Name: "office", CIDRs: []string{office}},
				{Name: "eu-1", Nodes: &v1alpha1.AllowlistNodes{ShrinkHoldSeconds: ptr.To[int32](0), NodeSelector: v1alpha1.NodeSelector{
					MatchLabels: map[string]string{"pool": "web"},
					Cluster:     &v1alpha1.NodeCluster{KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: "eu-1"}},
				}}},
			},
		},
	}
	if err := f.kube.Create(ctx, al); err != nil {
		t.Fatal(err)
	}
	want := append(remoteRanges(1, 2, 3), office)
	f.waitAllowed(t, "fleet-allowlist", 3000, 3009, want)
	set := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "fleet-nodes-eu-1"}}

	t.Run("NodeAdded", func(t *testing.T) {
		f.remoteNode(t, 5, "web")
		want = append(want, remoteRanges(5)...)
		took := f.waitAllowedWithin(t, "fleet-allowlist", want)
		t.Logf("a Node created in the second cluster reached GCP's rules in %s", took.Round(time.Millisecond))
		if took > 5*time.Second {
			t.Errorf("a remote Node reached GCP after %s, want within 5 s", took)
		}
	})

	t.Run("NodeRelabelledAndDeleted", func(t *testing.T) {
		n := &corev1.Node{}
		if err := f.remote.Client.Get(ctx, client.ObjectKey{Name: remoteNodeName(2)}, n); err != nil {
			t.Fatal(err)
		}
		n.Labels["pool"] = "batch"
		if err := f.remote.Client.Update(ctx, n); err != nil {
			t.Fatal(err)
		}
		if err := f.remote.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: remoteNodeName(3)}}); err != nil {
			t.Fatal(err)
		}
		want = slices.DeleteFunc(want, func(s string) bool { return slices.Contains(remoteRanges(2, 3), s) })
		took := f.waitAllowedWithin(t, "fleet-allowlist", want)
		t.Logf("a relabel and a delete in the second cluster reached GCP's rules in %s", took.Round(time.Millisecond))
	})

	// From the outage to the recovery GCP keeps every address.
	missed := f.sampleMissing("fleet-allowlist", want)
	t.Run("OutageHolds", func(t *testing.T) {
		if err := f.remote.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		stopped := time.Now()
		source := fmt.Sprintf("cannot read the cluster of Secret %s/eu-1 (%s)", armor.Namespace, f.remote.URL)
		f.waitSetUnready(t, set, source, "connection refused")
		t.Logf("the AddressSet said Unreadable %s after kube-apiserver's process ended", time.Since(stopped).Round(time.Millisecond))
		f.waitAllowed(t, "fleet-allowlist", 3000, 3009, want)
		f.waitAllowlistHeld(t, al, source)
	})

	t.Run("RecoveryResumes", func(t *testing.T) {
		if err := f.remote.StartAPIServer(); err != nil {
			t.Fatal(err)
		}
		started := time.Now()
		f.waitSetReady(t, set)
		t.Logf("the AddressSet was Ready again %s after kube-apiserver served again", time.Since(started).Round(time.Millisecond))
		if m := missed(); len(m) > 0 {
			t.Errorf("through the outage and the recovery, GCP's rules lacked addresses they held before: %v", m)
		}
		f.remoteNode(t, 6, "web")
		want = append(want, remoteRanges(6)...)
		f.waitAllowed(t, "fleet-allowlist", 3000, 3009, want)
	})

	t.Run("SecretRotatedToAToken", func(t *testing.T) {
		// A new watch starts with the new credentials; until it has listed
		// the Nodes the set publishes nothing new, never an empty set.
		missed = f.sampleMissing("fleet-allowlist", want)
		f.putSecret(t, "eu-1", "kubeconfig", withUser(t, f.remote.Kubeconfig, &clientcmdapi.AuthInfo{Token: readerToken}))
		f.remoteNode(t, 7, "web")
		want = append(want, remoteRanges(7)...)
		f.waitAllowed(t, "fleet-allowlist", 3000, 3009, want)
		f.waitSetReady(t, set)
		if m := missed(); len(m) > 0 {
			t.Errorf("while the Secret changed, GCP's rules lacked addresses they held before: %v", m)
		}
	})

	t.Run("SecretPointsElsewhere", func(t *testing.T) {
		// The management cluster itself, whose one web Node replaces the
		// second cluster's.
		f.createNode(t, 77, "web")
		f.putSecret(t, "eu-1", "kubeconfig", f.cp.Kubeconfig)
		want = []string{office, nodeIP(77) + "/32"}
		f.waitAllowed(t, "fleet-allowlist", 3000, 3009, want)
	})

	t.Run("SecretDeletedHolds", func(t *testing.T) {
		if err := f.kube.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "eu-1"}}); err != nil {
			t.Fatal(err)
		}
		f.waitSetUnready(t, set, fmt.Sprintf("Secret %s/eu-1 not found", armor.Namespace))
		f.waitAllowed(t, "fleet-allowlist", 3000, 3009, want)
	})
}

// TestRemoteClusterProviderConfigIdentity reads the second cluster as the
// ProviderConfig's Google identity: the kubeconfig gives only the server and
// its CA (its user runs gke-gcloud-auth-plugin, which the provider could
// not), and the API server accepts the ProviderConfig's access token. A
// token it does not accept holds the set with the API server's own answer.
func TestRemoteClusterProviderConfigIdentity(t *testing.T) {
	f := startFleet(t)
	for i := 1; i <= 2; i++ {
		f.remoteNode(t, i, "web")
	}
	gcloud := &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "gke-gcloud-auth-plugin", APIVersion: "client.authentication.k8s.io/v1beta1"}}
	f.putSecret(t, "gke", "kubeconfig", withUser(t, f.remote.Kubeconfig, gcloud))

	ok := f.identitySet(t, "gke", googleToken)
	f.waitSetAddresses(t, ok, remoteRanges(1, 2))

	bad := f.identitySet(t, "gke-wrong", "ya29.not-accepted")
	f.waitSetUnready(t, bad, "cannot read the cluster of Secret "+armor.Namespace+"/gke", "Unauthorized")
	f.get(t, bad)
	if msg := bad.Status.GetCondition(xpv2.TypeReady).Message; strings.Contains(msg, "ya29") {
		t.Errorf("the AddressSet's condition quotes the access token: %s", msg)
	}
}

// identitySet is an AddressSet reading the second cluster as a ProviderConfig
// named name whose access token is token.
func (f *fleet) identitySet(t *testing.T, name, token string) *v1alpha1.AddressSet {
	t.Helper()
	ctx := context.Background()
	f.putSecret(t, name+"-token", "token", []byte(token))
	pc := &pcv1beta1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: name},
		Spec: pcv1beta1.ProviderConfigSpec{ProjectID: project, Credentials: pcv1beta1.ProviderCredentials{Source: pcv1beta1.CredentialsSourceAccessToken,
			SecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: name + "-token"}, Key: "token"}}}}
	as := &v1alpha1.AddressSet{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: name},
		Spec: v1alpha1.AddressSetSpec{
			ProviderConfigRef: &xpv2.ProviderConfigReference{Kind: pcv1beta1.ProviderConfigKind, Name: name},
			ShrinkHoldSeconds: ptr.To[int32](0),
			Nodes: &v1alpha1.NodeSelector{MatchLabels: map[string]string{"pool": "web"}, Cluster: &v1alpha1.NodeCluster{
				KubeconfigSecretRef: v1alpha1.LocalSecretKey{Name: "gke"}, Identity: v1alpha1.IdentityProviderConfig}},
		}}
	for _, o := range []client.Object{pc, as} {
		if err := f.kube.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	return as
}

// remoteNode creates Node i of the second cluster in pool, with ExternalIP
// remoteIP(i).
func (f *fleet) remoteNode(t *testing.T, i int, pool string) {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: remoteNodeName(i), Labels: map[string]string{"pool": pool}}}
	if err := f.remote.Client.Create(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	n.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeExternalIP, Address: remoteIP(i)}, {Type: corev1.NodeInternalIP, Address: "10.1.0.1"}}
	if err := f.remote.Client.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}

func remoteNodeName(i int) string { return fmt.Sprintf("eu-1-node-%d", i) }
func remoteIP(i int) string       { return fmt.Sprintf("198.51.100.%d", i) }

func remoteRanges(is ...int) []string {
	out := make([]string, 0, len(is))
	for _, i := range is {
		out = append(out, remoteIP(i)+"/32")
	}
	return out
}

// putSecret creates or replaces Secret name of the test namespace.
func (f *fleet) putSecret(t *testing.T, name, key string, data []byte) {
	t.Helper()
	ctx := context.Background()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: name}}
	if err := f.kube.Get(ctx, client.ObjectKeyFromObject(s), s); err == nil {
		s.Data = map[string][]byte{key: data}
		if err := f.kube.Update(ctx, s); err != nil {
			t.Fatal(err)
		}
		return
	}
	s.Data = map[string][]byte{key: data}
	if err := f.kube.Create(ctx, s); err != nil {
		t.Fatal(err)
	}
}

// withUser is kubeconfig with its current context's user replaced by u.
func withUser(t *testing.T, kubeconfig []byte, u *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	cfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.AuthInfos[cfg.Contexts[cfg.CurrentContext].AuthInfo] = u
	out, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// waitAllowedWithin waits for the policy's rules to allow want, polling
// GCP (the emulator) closely, and returns how long that took.
func (f *fleet) waitAllowedWithin(t *testing.T, policy string, want []string) time.Duration {
	t.Helper()
	begin := time.Now()
	want = slices.Sorted(slices.Values(want))
	for time.Since(begin) < waitFor {
		if slices.Equal(f.allowedRanges(policy, 3000, 3009), want) {
			return time.Since(begin)
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.waitAllowed(t, policy, 3000, 3009, want) // fails with what GCP holds
	return time.Since(begin)
}

func (f *fleet) allowedRanges(policy string, first, last int64) []string {
	sp, err := f.gcpPolicy("", policy)
	if err != nil {
		return nil // unknown, unlike no range at all
	}
	got := []string{}
	for _, r := range sp.Rules {
		if r.Priority >= first && r.Priority <= last && r.Match != nil && r.Match.Config != nil {
			got = append(got, r.Match.Config.SrcIpRanges...)
		}
	}
	slices.Sort(got)
	return got
}

// sampleMissing reads the policy's rules every 20 ms until the returned
// function is called, which returns the ranges of held that any read lacked.
func (f *fleet) sampleMissing(policy string, held []string) func() []string {
	held = slices.Clone(held)
	stop, done := make(chan struct{}), make(chan []string)
	go func() {
		missing := map[string]bool{}
		for {
			select {
			case <-stop:
				done <- slices.Sorted(maps.Keys(missing))
				return
			case <-time.After(20 * time.Millisecond):
			}
			got := f.allowedRanges(policy, 3000, 3009)
			for _, r := range held {
				if got != nil && !slices.Contains(got, r) {
					missing[r] = true
				}
			}
		}
	}()
	return func() []string { close(stop); return <-done }
}

// waitSetUnready waits for the AddressSet to say Ready=False with every
// part in its message.
func (f *fleet) waitSetUnready(t *testing.T, as *v1alpha1.AddressSet, parts ...string) {
	t.Helper()
	eventually(t, waitFor, fmt.Sprintf("AddressSet %s to say %q", as.GetName(), parts), func() error {
		f.get(t, as)
		c := as.Status.GetCondition(xpv2.TypeReady)
		for _, p := range parts {
			if c.Status != corev1.ConditionFalse || !strings.Contains(c.Message, p) {
				return fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
			}
		}
		return nil
	})
	t.Logf("AddressSet %s: %s", as.GetName(), as.Status.GetCondition(xpv2.TypeReady).Message)
}

func (f *fleet) waitSetReady(t *testing.T, as *v1alpha1.AddressSet) {
	t.Helper()
	eventually(t, waitFor, fmt.Sprintf("AddressSet %s to be Ready", as.GetName()), func() error {
		f.get(t, as)
		if c := as.Status.GetCondition(xpv2.TypeReady); c.Status != corev1.ConditionTrue {
			return fmt.Errorf("Ready=%s: %s", c.Status, c.Message)
		}
		return nil
	})
}

func (f *fleet) waitSetAddresses(t *testing.T, as *v1alpha1.AddressSet, want []string) {
	t.Helper()
	eventually(t, waitFor, fmt.Sprintf("AddressSet %s to hold %v", as.GetName(), want), func() error {
		f.get(t, as)
		c := as.Status.GetCondition(xpv2.TypeReady)
		if c.Status != corev1.ConditionTrue || !slices.Equal(as.Status.Addresses, want) {
			return fmt.Errorf("Ready=%s (%s), addresses %v", c.Status, c.Message, as.Status.Addresses)
		}
		return nil
	})
}

// waitAllowlistHeld waits for the allowlist to say a source is unreadable,
// quoting it.
func (f *fleet) waitAllowlistHeld(t *testing.T, al *v1alpha1.SecurityPolicyAllowlist, part string) {
	t.Helper()
	eventually(t, waitFor, fmt.Sprintf("allowlist %s to say SourceUnreadable", al.GetName()), func() error {
		f.get(t, al)
		c := al.Status.GetCondition(v1alpha1.TypeCurrent)
		if c.Reason != v1alpha1.ReasonSourceUnreadable || !strings.Contains(c.Message, part) {
			return fmt.Errorf("Current=%s %s: %s", c.Status, c.Reason, c.Message)
		}
		return nil
	})
}
