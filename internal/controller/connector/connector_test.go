package connector

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	cav1beta1 "github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// fakeKey is recognisable fake credential data: it must never appear in an
// error message.
const fakeKey = `{"type":"service_account","private_key":"-----BEGIN PRIVATE KEY-----SUPERSECRETFAKEKEY-----END PRIVATE KEY-----"}`

const (
	mrNamespace     = "team-a"
	otherNamespace  = "kube-system"
	configName      = "default"
	secretName      = "gcp-creds"
	secretKey       = "credentials.json"
	project         = "armor-prod"
	pcUID           = "pc-uid"
	cpcUID          = "cpc-uid"
	endpoint        = "http://127.0.0.1:8787/compute/v1/"
	impersonateName = "cloud-armor@armor-prod.iam.gserviceaccount.com"
)

var errBoom = errors.New("boom")

// mr is a managed resource in mrNamespace using the named config.
func mr(kind, name string) *cav1beta1.SecurityPolicy {
	cr := &cav1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: mrNamespace, Name: "edge"}}
	if kind != "" {
		cr.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: kind, Name: name})
	}
	return cr
}

type pcModifier func(*v1beta1.ProviderConfig)

// pc is a namespaced ProviderConfig in mrNamespace reading a Secret.
func pc(m ...pcModifier) *v1beta1.ProviderConfig {
	p := &v1beta1.ProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Namespace: mrNamespace, Name: configName, UID: pcUID, Generation: 1},
		Spec: v1beta1.ProviderConfigSpec{ProjectID: project, Credentials: v1beta1.ProviderCredentials{
			Source:    xpv2.CredentialsSourceSecret,
			SecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: secretName}, Key: secretKey},
		}},
	}
	for _, fn := range m {
		fn(p)
	}
	return p
}

func withSource(s xpv2.CredentialsSource) pcModifier {
	return func(p *v1beta1.ProviderConfig) { p.Spec.Credentials.Source = s }
}

func withEndpoint(e string) pcModifier {
	return func(p *v1beta1.ProviderConfig) { p.Spec.Endpoint = &e }
}

func withoutSecretRef() pcModifier {
	return func(p *v1beta1.ProviderConfig) { p.Spec.Credentials.SecretRef = nil }
}

func withEnv(name string) pcModifier {
	return func(p *v1beta1.ProviderConfig) { p.Spec.Credentials.Env = &xpv2.EnvSelector{Name: name} }
}

func withFs(path string) pcModifier {
	return func(p *v1beta1.ProviderConfig) { p.Spec.Credentials.Fs = &xpv2.FsSelector{Path: path} }
}

func withImpersonate(name string) pcModifier {
	return func(p *v1beta1.ProviderConfig) {
		p.Spec.Credentials.ImpersonateServiceAccount = &v1beta1.ImpersonateServiceAccountSpec{Name: name}
	}
}

func withGeneration(g int64) pcModifier {
	return func(p *v1beta1.ProviderConfig) { p.SetGeneration(g) }
}

// cpc is a ClusterProviderConfig reading a Secret in otherNamespace.
func cpc(m ...func(*v1beta1.ClusterProviderConfig)) *v1beta1.ClusterProviderConfig {
	c := &v1beta1.ClusterProviderConfig{
		ObjectMeta: metav1.ObjectMeta{Name: configName, UID: cpcUID, Generation: 3},
		Spec: v1beta1.ClusterProviderConfigSpec{ProjectID: project, Credentials: v1beta1.ClusterProviderCredentials{
			Source: xpv2.CredentialsSourceSecret,
			SecretRef: &xpv2.SecretKeySelector{
				SecretReference: xpv2.SecretReference{Namespace: otherNamespace, Name: secretName}, Key: secretKey},
		}},
	}
	for _, fn := range m {
		fn(c)
	}
	return c
}

func withNamespaceSelector(k, v string) func(*v1beta1.ClusterProviderConfig) {
	return func(c *v1beta1.ClusterProviderConfig) {
		c.Spec.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
}

func namespace(name, k, v string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{k: v}}}
}

func secret(data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: mrNamespace, Name: secretName}, Data: data}
}

// reader returns a MockClient that serves the objects by type, records the
// key of every Get in keys, and fails with err when err is set.
func reader(keys *[]types.NamespacedName, err error, objs ...client.Object) *test.MockClient {
	return &test.MockClient{MockGet: func(_ context.Context, key client.ObjectKey, obj client.Object) error {
		*keys = append(*keys, key)
		if err != nil {
			return err
		}
		for _, o := range objs {
			switch want := o.(type) {
			case *v1beta1.ProviderConfig:
				if got, ok := obj.(*v1beta1.ProviderConfig); ok {
					want.DeepCopyInto(got)
					return nil
				}
			case *v1beta1.ClusterProviderConfig:
				if got, ok := obj.(*v1beta1.ClusterProviderConfig); ok {
					want.DeepCopyInto(got)
					return nil
				}
			case *corev1.Secret:
				if got, ok := obj.(*corev1.Secret); ok {
					want.DeepCopyInto(got)
					return nil
				}
			case *corev1.Namespace:
				if got, ok := obj.(*corev1.Namespace); ok && key.Name == want.GetName() {
					want.DeepCopyInto(got)
					return nil
				}
			}
		}
		return kerrors.NewNotFound(schema.GroupResource{}, key.Name)
	}}
}

func TestConnect(t *testing.T) {
	built := &gcp.Client{}
	type fields struct {
		kubeObjs   []client.Object
		kubeErr    error
		secretObjs []client.Object
		secretErr  error
		track      error
		buildErr   error
		env        map[string]string
		files      map[string]string
		ambient    bool     // --namespaced-ambient-credentials
		endpoints  []string // --namespaced-endpoint
	}
	type args struct {
		mg resource.ModernManaged
	}
	type want struct {
		conn       *Connection
		err        error
		kubeKeys   []types.NamespacedName
		secretKeys []types.NamespacedName
		creds      *gcp.Credentials // passed to the BuildFn; nil when it is not called
	}
	pcKey := types.NamespacedName{Namespace: mrNamespace, Name: configName}
	cpcKey := types.NamespacedName{Name: configName}
	ownSecret := types.NamespacedName{Namespace: mrNamespace, Name: secretName}
	otherSecret := types.NamespacedName{Namespace: otherNamespace, Name: secretName}
	keyData := map[string][]byte{secretKey: []byte(fakeKey)}
	secretCreds := &gcp.Credentials{Source: gcp.SourceSecret, Data: []byte(fakeKey)}
	// A namespaced ProviderConfig's Secret is the tenant's: only a Google
	// service account key is taken from it.
	tenantCreds := &gcp.Credentials{Source: gcp.SourceSecret, Data: []byte(fakeKey), Trust: gcp.TrustTenant}

	cases := map[string]struct {
		reason string
		fields fields
		args   args
		want   want
	}{
		"ProviderConfig": {
			reason: "A ProviderConfig is read from the managed resource's namespace, with its Secret.",
			fields: fields{kubeObjs: []client.Object{pc()}, secretObjs: []client.Object{secret(keyData)}},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{conn: &Connection{Client: built, Project: project}, kubeKeys: []types.NamespacedName{pcKey},
				secretKeys: []types.NamespacedName{ownSecret}, creds: tenantCreds},
		},
		"ProviderConfigEndpoint": {
			reason: "An endpoint override of an origin the platform team allowed reaches the client.",
			fields: fields{kubeObjs: []client.Object{pc(withEndpoint(endpoint))}, secretObjs: []client.Object{secret(keyData)},
				endpoints: []string{"http://127.0.0.1:8787"}},
			args: args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{conn: &Connection{Client: built, Project: project}, kubeKeys: []types.NamespacedName{pcKey},
				secretKeys: []types.NamespacedName{ownSecret},
				creds:      &gcp.Credentials{Source: gcp.SourceSecret, Data: []byte(fakeKey), Endpoint: endpoint, Trust: gcp.TrustTenant}},
		},
		"ProviderConfigEndpointRefused": {
			reason: "A namespaced endpoint the platform team did not allow is refused before the Secret is read or a client built: every call, with the tenant's token, would go there.",
			fields: fields{kubeObjs: []client.Object{pc(withEndpoint("http://169.254.169.254/computeMetadata/v1/"))}, secretObjs: []client.Object{secret(keyData)},
				endpoints: []string{"http://127.0.0.1:8787"}},
			args: args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{err: errors.Errorf(errFmtEndpoint, mrNamespace, configName, "http://169.254.169.254/computeMetadata/v1/"), kubeKeys: []types.NamespacedName{pcKey}},
		},
		"ClusterProviderConfig": {
			reason: "A ClusterProviderConfig is read by name and may name a Secret in any namespace.",
			fields: fields{kubeObjs: []client.Object{cpc()}, secretObjs: []client.Object{secret(keyData)}},
			args:   args{mg: mr(v1beta1.ClusterProviderConfigKind, configName)},
			want: want{conn: &Connection{Client: built, Project: project}, kubeKeys: []types.NamespacedName{cpcKey},
				secretKeys: []types.NamespacedName{otherSecret}, creds: secretCreds},
		},
		"AccessToken": {
			reason: "An access token is read from the Secret like a key.",
			fields: fields{kubeObjs: []client.Object{pc(withSource(v1beta1.CredentialsSourceAccessToken))},
				secretObjs: []client.Object{secret(keyData)}},
			args: args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{conn: &Connection{Client: built, Project: project}, kubeKeys: []types.NamespacedName{pcKey},
				secretKeys: []types.NamespacedName{ownSecret},
				creds:      &gcp.Credentials{Source: gcp.SourceAccessToken, Data: []byte(fakeKey)}},
		},
		"InjectedIdentity": {
			reason: "InjectedIdentity reads no Secret.",
			fields: fields{ambient: true, kubeObjs: []client.Object{pc(withSource(xpv2.CredentialsSourceInjectedIdentity), withoutSecretRef())}},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{conn: &Connection{Client: built, Project: project}, kubeKeys: []types.NamespacedName{pcKey},
				creds: &gcp.Credentials{Source: gcp.SourceInjectedIdentity}},
		},
		"Impersonate": {
			reason: "ImpersonateServiceAccount passes the service account on.",
			fields: fields{ambient: true, kubeObjs: []client.Object{pc(withSource(v1beta1.CredentialsSourceImpersonateServiceAccount), withImpersonate(impersonateName))}},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{conn: &Connection{Client: built, Project: project}, kubeKeys: []types.NamespacedName{pcKey},
				creds: &gcp.Credentials{Source: gcp.SourceImpersonateServiceAccount, ImpersonateServiceAccount: impersonateName}},
		},
		"ImpersonateMissing": {
			reason: "ImpersonateServiceAccount without a service account is an error.",
			fields: fields{ambient: true, kubeObjs: []client.Object{pc(withSource(v1beta1.CredentialsSourceImpersonateServiceAccount))}},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want:   want{err: errors.New(errNoImpersonate), kubeKeys: []types.NamespacedName{pcKey}},
		},
		"Environment": {
			reason: "Environment reads the named variable.",
			fields: fields{ambient: true, kubeObjs: []client.Object{pc(withSource(xpv2.CredentialsSourceEnvironment), withEnv("GCP_KEY"))},
				env: map[string]string{"GCP_KEY": fakeKey}},
			args: args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{conn: &Connection{Client: built, Project: project}, kubeKeys: []types.NamespacedName{pcKey},
				creds: &gcp.Credentials{Source: gcp.SourceEnvironment, Data: []byte(fakeKey)}},
		},
		"EnvironmentEmpty": {
			reason: "An empty environment variable is an error naming the variable.",
			fields: fields{ambient: true, kubeObjs: []client.Object{pc(withSource(xpv2.CredentialsSourceEnvironment), withEnv("GCP_KEY"))}},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want:   want{err: errors.Errorf(errFmtEmptyEnv, "GCP_KEY"), kubeKeys: []types.NamespacedName{pcKey}},
		},
		"EnvironmentMissing": {
			reason: "Environment without credentials.env is an error.",
			fields: fields{ambient: true, kubeObjs: []client.Object{pc(withSource(xpv2.CredentialsSourceEnvironment))}},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want:   want{err: errors.New(errNoEnv), kubeKeys: []types.NamespacedName{pcKey}},
		},
		"Filesystem": {
			reason: "Filesystem reads the named file.",
			fields: fields{ambient: true, kubeObjs: []client.Object{pc(withSource(xpv2.CredentialsSourceFilesystem), withFs("/creds/key.json"))},
				files: map[string]string{"/creds/key.json": fakeKey}},
			args: args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{conn: &Connection{Client: built, Project: project}, kubeKeys: []types.NamespacedName{pcKey},
				creds: &gcp.Credentials{Source: gcp.SourceFilesystem, Data: []byte(fakeKey)}},
		},
		"FilesystemError": {
			reason: "A file that cannot be read is an error.",
			fields: fields{ambient: true, kubeObjs: []client.Object{pc(withSource(xpv2.CredentialsSourceFilesystem), withFs("/creds/missing.json"))}},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want:   want{err: errors.Wrap(errBoom, errReadFile), kubeKeys: []types.NamespacedName{pcKey}},
		},
		"FilesystemMissing": {
			reason: "Filesystem without credentials.fs is an error.",
			fields: fields{ambient: true, kubeObjs: []client.Object{pc(withSource(xpv2.CredentialsSourceFilesystem))}},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want:   want{err: errors.New(errNoFs), kubeKeys: []types.NamespacedName{pcKey}},
		},
		"TrackError": {
			reason: "A usage that cannot be tracked is an error, and no Secret is read.",
			fields: fields{kubeObjs: []client.Object{pc()}, track: errBoom},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want:   want{err: errors.Wrap(errBoom, errTrackUsage), kubeKeys: []types.NamespacedName{pcKey}},
		},
		"DeletingNotTracked": {
			reason: "A resource being deleted records no new use: a namespace being deleted refuses to create one, and the resource must still reach GCP to delete what it manages.",
			fields: fields{kubeObjs: []client.Object{pc()}, secretObjs: []client.Object{secret(keyData)}, track: errBoom},
			args: args{mg: func() resource.ModernManaged {
				cr := mr(v1beta1.ProviderConfigKind, configName)
				now := metav1.Now()
				cr.SetDeletionTimestamp(&now)
				return cr
			}()},
			want: want{conn: &Connection{Client: built, Project: project}, kubeKeys: []types.NamespacedName{pcKey},
				secretKeys: []types.NamespacedName{ownSecret}, creds: tenantCreds},
		},
		"AmbientRefused": {
			reason: "A namespaced ProviderConfig may not act with the provider's own identity: refused before any usage is tracked or credential read.",
			fields: fields{kubeObjs: []client.Object{pc(withSource(xpv2.CredentialsSourceInjectedIdentity), withoutSecretRef())}, track: errBoom},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{err: errors.Errorf(errFmtAmbient, mrNamespace, configName, xpv2.CredentialsSourceInjectedIdentity),
				kubeKeys: []types.NamespacedName{pcKey}},
		},
		"AmbientRefusedEveryAmbientSource": {
			reason: "Filesystem is ambient too: the file is the provider's, not the namespace's.",
			fields: fields{kubeObjs: []client.Object{pc(withSource(xpv2.CredentialsSourceFilesystem), withFs("/creds/key.json"))},
				files: map[string]string{"/creds/key.json": fakeKey}},
			args: args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{err: errors.Errorf(errFmtAmbient, mrNamespace, configName, xpv2.CredentialsSourceFilesystem),
				kubeKeys: []types.NamespacedName{pcKey}},
		},
		"ClusterProviderConfigAdmitsNamespace": {
			reason: "A ClusterProviderConfig whose namespaceSelector matches the resource's namespace serves it.",
			fields: fields{kubeObjs: []client.Object{cpc(withNamespaceSelector("tenant", "a")), namespace(mrNamespace, "tenant", "a")},
				secretObjs: []client.Object{secret(keyData)}},
			args: args{mg: mr(v1beta1.ClusterProviderConfigKind, configName)},
			want: want{conn: &Connection{Client: built, Project: project},
				kubeKeys:   []types.NamespacedName{cpcKey, {Name: mrNamespace}},
				secretKeys: []types.NamespacedName{otherSecret}, creds: secretCreds},
		},
		"ClusterProviderConfigRefusesNamespace": {
			reason: "A ClusterProviderConfig whose namespaceSelector does not match refuses the resource before any usage is tracked or Secret read.",
			fields: fields{kubeObjs: []client.Object{cpc(withNamespaceSelector("tenant", "b")), namespace(mrNamespace, "tenant", "a")},
				secretObjs: []client.Object{secret(keyData)}, track: errBoom},
			args: args{mg: mr(v1beta1.ClusterProviderConfigKind, configName)},
			want: want{err: errors.Errorf(errFmtNotAdmitted, configName, mrNamespace),
				kubeKeys: []types.NamespacedName{cpcKey, {Name: mrNamespace}}},
		},
		"NoConfigRef": {
			reason: "A managed resource without a providerConfigRef cannot connect.",
			args:   args{mg: mr("", "")},
			want:   want{err: errors.New(errNoConfigRef)},
		},
		"UnknownKind": {
			reason: "Only ProviderConfig and ClusterProviderConfig are supported.",
			args:   args{mg: mr("LegacyProviderConfig", configName)},
			want:   want{err: errors.Errorf(errFmtUnknownKind, "LegacyProviderConfig")},
		},
		"GetProviderConfigError": {
			reason: "A ProviderConfig that cannot be read is an error.",
			fields: fields{kubeErr: errBoom},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want:   want{err: errors.Wrap(errBoom, errGetPC), kubeKeys: []types.NamespacedName{pcKey}},
		},
		"GetClusterProviderConfigError": {
			reason: "A ClusterProviderConfig that cannot be read is an error.",
			fields: fields{kubeErr: errBoom},
			args:   args{mg: mr(v1beta1.ClusterProviderConfigKind, configName)},
			want:   want{err: errors.Wrap(errBoom, errGetCPC), kubeKeys: []types.NamespacedName{cpcKey}},
		},
		"NoSecretRef": {
			reason: "Source Secret without a secretRef is an error.",
			fields: fields{kubeObjs: []client.Object{pc(withoutSecretRef())}},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want:   want{err: errors.New(errNoSecretRef), kubeKeys: []types.NamespacedName{pcKey}},
		},
		"GetSecretError": {
			reason: "A Secret that cannot be read is an error naming it.",
			fields: fields{kubeObjs: []client.Object{pc()}, secretErr: errBoom},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{err: errors.Wrapf(errBoom, errFmtGetSecret, mrNamespace, secretName),
				kubeKeys: []types.NamespacedName{pcKey}, secretKeys: []types.NamespacedName{ownSecret}},
		},
		"MissingSecretKey": {
			reason: "A Secret without the key is an error naming the key, never showing the data.",
			fields: fields{kubeObjs: []client.Object{pc()}, secretObjs: []client.Object{secret(map[string][]byte{"other.json": []byte(fakeKey)})}},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{err: errors.Errorf(errFmtNoSecretKey, mrNamespace, secretName, secretKey),
				kubeKeys: []types.NamespacedName{pcKey}, secretKeys: []types.NamespacedName{ownSecret}},
		},
		"BuildError": {
			reason: "A client that cannot be built is an error.",
			fields: fields{kubeObjs: []client.Object{pc()}, secretObjs: []client.Object{secret(keyData)}, buildErr: errBoom},
			args:   args{mg: mr(v1beta1.ProviderConfigKind, configName)},
			want: want{err: errors.Wrap(errBoom, errBuildClient), kubeKeys: []types.NamespacedName{pcKey},
				secretKeys: []types.NamespacedName{ownSecret}, creds: tenantCreds},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var kubeKeys, secretKeys []types.NamespacedName
			var creds *gcp.Credentials
			c := &Connector{
				ambient:   tc.fields.ambient,
				endpoints: tc.fields.endpoints,
				kube:      reader(&kubeKeys, tc.fields.kubeErr, tc.fields.kubeObjs...),
				secrets:   reader(&secretKeys, tc.fields.secretErr, tc.fields.secretObjs...),
				usage:     resource.ModernTrackerFn(func(context.Context, resource.ModernManaged) error { return tc.fields.track }),
				clients:   gcp.NewClientCache(0),
				build: func(_ context.Context, c gcp.Credentials) (*gcp.Client, error) {
					creds = &c
					if tc.fields.buildErr != nil {
						return nil, tc.fields.buildErr
					}
					return built, nil
				},
				readEnv: func(k string) string { return tc.fields.env[k] },
				readFs: func(p string) ([]byte, error) {
					if d, ok := tc.fields.files[p]; ok {
						return []byte(d), nil
					}
					return nil, errBoom
				},
			}
			got, err := c.Connect(context.Background(), tc.args.mg)
			if diff := cmp.Diff(tc.want.err, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nConnect(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if err != nil && strings.Contains(err.Error(), "SUPERSECRETFAKEKEY") {
				t.Errorf("\n%s\nConnect(...): error shows the Secret's data: %q", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.conn, got, cmp.Comparer(func(a, b *gcp.Client) bool { return a == b }), cmpopts.IgnoreUnexported(Connection{})); diff != "" {
				t.Errorf("\n%s\nConnect(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.kubeKeys, kubeKeys); diff != "" {
				t.Errorf("\n%s\nConnect(...): -want config reads, +got config reads:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.secretKeys, secretKeys); diff != "" {
				t.Errorf("\n%s\nConnect(...): -want Secret reads, +got Secret reads:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.creds, creds); diff != "" {
				t.Errorf("\n%s\nConnect(...): -want credentials, +got credentials:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestConnectSecretNamespace(t *testing.T) {
	// Tenant isolation: whatever namespace a namespaced ProviderConfig's
	// object or Secret name suggests, its Secret is read from the
	// ProviderConfig's own namespace. A ProviderConfig in team-b (reached
	// from an MR in team-b) reads team-b's Secret, never team-a's.
	cases := map[string]struct {
		reason    string
		namespace string
	}{
		"TeamA": {reason: "An MR in team-a reads team-a's Secret.", namespace: "team-a"},
		"TeamB": {reason: "An MR in team-b reads team-b's Secret.", namespace: "team-b"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var kubeKeys, secretKeys []types.NamespacedName
			p := pc()
			p.SetNamespace(tc.namespace)
			m := mr(v1beta1.ProviderConfigKind, configName)
			m.SetNamespace(tc.namespace)
			c := &Connector{
				kube:    reader(&kubeKeys, nil, p),
				secrets: reader(&secretKeys, nil, secret(map[string][]byte{secretKey: []byte(fakeKey)})),
				usage:   resource.ModernTrackerFn(func(context.Context, resource.ModernManaged) error { return nil }),
				clients: gcp.NewClientCache(0),
				build:   func(context.Context, gcp.Credentials) (*gcp.Client, error) { return &gcp.Client{}, nil },
			}
			if _, err := c.Connect(context.Background(), m); err != nil {
				t.Fatalf("\n%s\nConnect(...): %v", tc.reason, err)
			}
			want := []types.NamespacedName{{Namespace: tc.namespace, Name: secretName}}
			if diff := cmp.Diff(want, secretKeys); diff != "" {
				t.Errorf("\n%s\nConnect(...): -want Secret reads, +got Secret reads:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff([]types.NamespacedName{{Namespace: tc.namespace, Name: configName}}, kubeKeys); diff != "" {
				t.Errorf("\n%s\nConnect(...): -want config reads, +got config reads:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestConnectClientCache(t *testing.T) {
	// Connect runs on every reconcile: the client must be built once per
	// (config generation, credentials), and again when either changes.
	config := pc()
	data := map[string][]byte{secretKey: []byte(fakeKey)}
	builds := 0
	c := &Connector{
		kube: &test.MockClient{MockGet: test.NewMockGetFn(nil, func(o client.Object) error {
			config.DeepCopyInto(o.(*v1beta1.ProviderConfig)) //nolint:forcetypeassert // Only ProviderConfigs are read.
			return nil
		})},
		secrets: &test.MockClient{MockGet: test.NewMockGetFn(nil, func(o client.Object) error {
			secret(data).DeepCopyInto(o.(*corev1.Secret)) //nolint:forcetypeassert // Only Secrets are read.
			return nil
		})},
		usage:   resource.ModernTrackerFn(func(context.Context, resource.ModernManaged) error { return nil }),
		clients: gcp.NewClientCache(0),
		build: func(context.Context, gcp.Credentials) (*gcp.Client, error) {
			builds++
			return &gcp.Client{}, nil
		},
	}
	steps := []struct {
		reason string
		change func()
		builds int
		same   bool // the client is the one the previous step returned
	}{
		{reason: "The first Connect builds a client.", change: func() {}, builds: 1},
		{reason: "The same config and Secret reuse it.", change: func() {}, builds: 1, same: true},
		{reason: "And again.", change: func() {}, builds: 1, same: true},
		{reason: "A changed Secret builds a new client.", change: func() { data = map[string][]byte{secretKey: []byte(fakeKey + " rotated")} }, builds: 2},
		{reason: "Which is then reused.", change: func() {}, builds: 2, same: true},
		{reason: "A new config generation builds a new client.", change: func() { withGeneration(2)(config) }, builds: 3},
		{reason: "Which is then reused.", change: func() {}, builds: 3, same: true},
	}
	var prev *gcp.Client
	for i, s := range steps {
		s.change()
		conn, err := c.Connect(context.Background(), mr(v1beta1.ProviderConfigKind, configName))
		if err != nil {
			t.Fatalf("step %d: %s\nConnect(...): %v", i, s.reason, err)
		}
		if builds != s.builds {
			t.Errorf("step %d: %s\nConnect(...): want %d builds, got %d", i, s.reason, s.builds, builds)
		}
		if (conn.Client == prev) != s.same {
			t.Errorf("step %d: %s\nConnect(...): want the previous client: %t, got it: %t", i, s.reason, s.same, conn.Client == prev)
		}
		prev = conn.Client
	}
}

func TestConnectErrorsHideSecretData(t *testing.T) {
	// The Secret's data must never reach an error (and so a condition or an
	// event), also when the real client builder rejects it.
	cases := map[string]struct {
		reason string
		data   string
	}{
		"NotJSON": {
			reason: "Malformed JSON is reported without quoting it.",
			data:   "SUPERSECRETFAKEKEY not json",
		},
		"TruncatedJSON": {
			reason: "Truncated JSON is reported without quoting it.",
			data:   fakeKey[:40],
		},
		"UnknownType": {
			reason: "An unsupported credentials type is reported without the key.",
			data:   `{"type":"SUPERSECRETFAKEKEY","private_key":"SUPERSECRETFAKEKEY"}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var keys []types.NamespacedName
			c := &Connector{
				kube:    reader(&keys, nil, pc()),
				secrets: reader(&keys, nil, secret(map[string][]byte{secretKey: []byte(tc.data)})),
				usage:   resource.ModernTrackerFn(func(context.Context, resource.ModernManaged) error { return nil }),
				clients: gcp.NewClientCache(0),
				build: func(ctx context.Context, creds gcp.Credentials) (*gcp.Client, error) {
					return gcp.NewClientForCredentials(ctx, creds, gcp.NewSnapshotCache(), gcp.NewWriteQueue())
				},
			}
			_, err := c.Connect(context.Background(), mr(v1beta1.ProviderConfigKind, configName))
			if err == nil {
				t.Fatalf("\n%s\nConnect(...): want an error, got none", tc.reason)
			}
			if strings.Contains(err.Error(), "SUPERSECRETFAKEKEY") || strings.Contains(err.Error(), tc.data) {
				t.Errorf("\n%s\nConnect(...): error shows the Secret's data: %q", tc.reason, err)
			}
		})
	}
}

func TestConnectionProjectOr(t *testing.T) {
	other := "other-project"
	type want struct {
		project string
		err     error
	}
	cases := map[string]struct {
		reason  string
		allowed []string
		project *string
		want    want
	}{
		"Unset":             {reason: "A resource without a project uses the config's.", want: want{project: "config-project"}},
		"SetNamespaced":     {reason: "A namespaced ProviderConfig's own credentials decide which projects they reach.", project: &other, want: want{project: other}},
		"ClusterOwnProject": {reason: "A ClusterProviderConfig admits its own project.", allowed: []string{"config-project"}, want: want{project: "config-project"}},
		"ClusterListed":     {reason: "A listed project is admitted.", allowed: []string{"config-project", other}, project: &other, want: want{project: other}},
		"ClusterAny":        {reason: "\"*\" admits every project.", allowed: []string{AnyProject}, project: &other, want: want{project: other}},
		"ClusterNotListed": {
			reason: "A project the ClusterProviderConfig does not list is refused before any call, naming what to grant.", allowed: []string{"config-project"}, project: &other,
			want: want{err: errors.Errorf(errFmtProject, `ClusterProviderConfig "shared"`, other, "config-project")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := &Connection{Project: "config-project", config: `ClusterProviderConfig "shared"`, allowed: tc.allowed}
			got, err := c.ProjectOr(tc.project)
			if diff := cmp.Diff(tc.want, want{project: got, err: err}, test.EquateErrors(), cmp.AllowUnexported(want{})); diff != "" {
				t.Errorf("\n%s\nProjectOr(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestEndpointAllowed(t *testing.T) {
	origins := []string{"http://cloudarmor-emulator.cloudarmor-emulator.svc.cluster.local:8787", "https://compute-psc.example.com"}
	cases := map[string]struct {
		endpoint string
		want     bool
	}{
		"Listed":             {endpoint: "http://cloudarmor-emulator.cloudarmor-emulator.svc.cluster.local:8787/compute/v1/", want: true},
		"DefaultPort":        {endpoint: "https://compute-psc.example.com:443/compute/v1", want: true},
		"OtherPort":          {endpoint: "http://cloudarmor-emulator.cloudarmor-emulator.svc.cluster.local:8788/"},
		"OtherScheme":        {endpoint: "https://cloudarmor-emulator.cloudarmor-emulator.svc.cluster.local:8787/"},
		"Metadata":           {endpoint: "http://169.254.169.254/computeMetadata/v1/"},
		"APIServer":          {endpoint: "https://kubernetes.default.svc/"},
		"UserInfo":           {endpoint: "https://user@compute-psc.example.com/"},
		"SuffixOfListedHost": {endpoint: "https://evil-compute-psc.example.com/"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := endpointAllowed(tc.endpoint, origins); got != tc.want {
				t.Errorf("endpointAllowed(%q): want %t, got %t", tc.endpoint, tc.want, got)
			}
		})
	}
}

func TestAdmitProjectWide(t *testing.T) {
	projectWide := func(k, v string) func(*v1beta1.ClusterProviderConfig) {
		return func(c *v1beta1.ClusterProviderConfig) {
			c.Spec.ProjectSettingsNamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
		}
	}
	everyNamespace := func(c *v1beta1.ClusterProviderConfig) {
		c.Spec.ProjectSettingsNamespaceSelector = &metav1.LabelSelector{}
	}
	refused := `ClusterProviderConfig "default" does not let namespace "team-a" change project-wide settings such as the project's Cloud Armor tier: ` +
		"its spec.projectSettingsNamespaceSelector is unset or does not match the namespace's labels. " +
		"Ask your platform team to select this namespace there, or use a ProviderConfig in this namespace with credentials of its own"
	cases := map[string]struct {
		reason string
		mg     *cav1beta1.SecurityPolicy
		objs   []client.Object
		want   string
	}{
		"ProviderConfig": {
			reason: "A namespaced ProviderConfig uses the namespace's own credentials: GCP decides what they may change.",
			mg:     mr(v1beta1.ProviderConfigKind, configName),
			objs:   []client.Object{pc()},
		},
		"ClusterProviderConfigUnset": {
			reason: "A ClusterProviderConfig without projectSettingsNamespaceSelector lets no namespace change a project.",
			mg:     mr(v1beta1.ClusterProviderConfigKind, configName),
			objs:   []client.Object{cpc(), namespace(mrNamespace, "tenant", "a")},
			want:   refused,
		},
		"ClusterProviderConfigOtherNamespace": {
			reason: "A selector that does not match the namespace refuses it.",
			mg:     mr(v1beta1.ClusterProviderConfigKind, configName),
			objs:   []client.Object{cpc(projectWide("platform", "true")), namespace(mrNamespace, "tenant", "a")},
			want:   refused,
		},
		"ClusterProviderConfigSelected": {
			reason: "A selector matching the namespace's labels admits it.",
			mg:     mr(v1beta1.ClusterProviderConfigKind, configName),
			objs:   []client.Object{cpc(projectWide("platform", "true")), namespace(mrNamespace, "platform", "true")},
		},
		"ClusterProviderConfigEvery": {
			reason: "An empty selector selects every namespace.",
			mg:     mr(v1beta1.ClusterProviderConfigKind, configName),
			objs:   []client.Object{cpc(everyNamespace), namespace(mrNamespace, "tenant", "a")},
		},
		"NoConfig": {
			reason: "A resource without a config reference is an error.",
			mg:     mr("", ""),
			want:   errNoConfigRef,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var keys []types.NamespacedName
			c := New(reader(&keys, nil, tc.objs...), nil, nil, nil, nil)
			got := ""
			if err := c.AdmitProjectWide(context.Background(), tc.mg); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nAdmitProjectWide(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestConnectOrganizationWide(t *testing.T) {
	refused := `an organization-level resource affects every project below its organization, folder or attachment point, ` +
		`so it may only use a ClusterProviderConfig: providerConfigRef names ProviderConfig "default", which is refused. Ask your platform team for a ClusterProviderConfig`
	cases := map[string]struct {
		reason   string
		mg       *cav1beta1.SecurityPolicy
		objs     []client.Object
		want     string
		wantRead bool
	}{
		"ProviderConfig": {
			reason: "A namespaced ProviderConfig is refused before it is read, whatever its credentials.",
			mg:     mr(v1beta1.ProviderConfigKind, configName),
			objs:   []client.Object{pc()},
			want:   refused,
		},
		"ClusterProviderConfig": {
			reason:   "A ClusterProviderConfig connects as Connect does.",
			mg:       mr(v1beta1.ClusterProviderConfigKind, configName),
			objs:     []client.Object{cpc()},
			wantRead: true,
		},
		"NoConfig": {
			reason: "A resource without a config reference is Connect's error.",
			mg:     mr("", ""),
			want:   errNoConfigRef,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var keys, secretKeys []types.NamespacedName
			c := New(reader(&keys, nil, tc.objs...), reader(&secretKeys, nil, secret(map[string][]byte{secretKey: []byte(fakeKey)})),
				resource.ModernTrackerFn(func(context.Context, resource.ModernManaged) error { return nil }), gcp.NewClientCache(0),
				func(context.Context, gcp.Credentials) (*gcp.Client, error) { return &gcp.Client{}, nil })
			got := ""
			if _, err := c.connectOrganizationWide(context.Background(), tc.mg); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nconnectOrganizationWide(...): -want, +got:\n%s", tc.reason, diff)
			}
			if read := len(keys) > 0; read != tc.wantRead {
				t.Errorf("\n%s\nconnectOrganizationWide(...): want config read %t, got %t", tc.reason, tc.wantRead, read)
			}
		})
	}
}
