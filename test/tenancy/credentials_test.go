package tenancy

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// tenantServer is a server a hostile tenant runs, as the provider's pod
// reaches it: it answers every request with a token and remembers what it
// received, which must stay nothing.
type tenantServer struct {
	url      string
	mu       sync.Mutex
	received []string
}

func (s *suite) newTenantServer(t *testing.T) *tenantServer {
	t.Helper()
	ts := &tenantServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		ts.mu.Lock()
		ts.received = append(ts.received, fmt.Sprintf("%s %s %s (Authorization %q)", r.Method, r.URL.Path, b, r.Header.Get("Authorization")))
		ts.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"stolen","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}`))
	}))
	t.Cleanup(srv.Close)
	addr, err := s.plat.Node.Expose(strings.TrimPrefix(srv.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	ts.url = "http://" + addr
	return ts
}

// nothing is a condition: the tenant's server received no request.
func (ts *tenantServer) nothing() error {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	if len(ts.received) > 0 {
		return fmt.Errorf("the tenant's server received %d requests from the provider: %q", len(ts.received), ts.received)
	}
	return nil
}

// notInGCP is a condition: GCP holds no policy project/name.
func (s *suite) notInGCP(project, name string) func() error {
	return func() error {
		if _, ok := s.Emu.Snapshot()[policyPath(project, name)]; ok {
			return fmt.Errorf("GCP holds policy %s of project %s, created by a refused object", name, project)
		}
		return nil
	}
}

// testCredentialsStayOurs: a tenant's credentials Secret cannot make the
// provider read its own files or call a server the tenant names. Each JSON
// below, before the provider checked who wrote it, made the provider read
// the file or URL it names (its own ServiceAccount token, which may read
// every tenant's Secret) and post it, or a signed assertion, to the
// tenant's token server. Now the namespace's ProviderConfig is refused,
// saying which type or field and whom to ask, and the server receives
// nothing.
func (s *suite) testCredentialsStayOurs(t *testing.T) {
	ts := s.newTenantServer(t)
	external := func(source map[string]any) []byte {
		return mustJSON(t, map[string]any{"type": "external_account", "audience": "//iam.googleapis.com/tenant",
			"subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": ts.url + "/token", "credential_source": source})
	}
	const typeRefused = `credentials JSON of type "external_account" is refused for a namespaced ProviderConfig`
	cases := map[string]struct {
		json []byte
		want []string
	}{
		"ExternalAccountFile": {
			json: external(map[string]any{"file": "/var/run/secrets/kubernetes.io/serviceaccount/token"}),
			want: []string{typeRefused, "Ask your platform team"},
		},
		"ExternalAccountURL": {
			json: external(map[string]any{"url": ts.url + "/subject", "headers": map[string]string{"Metadata-Flavor": "Google"}}),
			want: []string{typeRefused, "Ask your platform team"},
		},
		"ServiceAccountForeignTokenURI": {
			json: serviceAccountKey(t, ts.url+"/token"),
			want: []string{`credentials JSON field token_uri is refused: "` + ts.url + `/token" is not an https URL on a Google host`, "--allow-token-url"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			n := "stolen-" + strings.ToLower(name)
			s.create(t, fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata: {name: %s, namespace: tenant-a}
stringData: {key.json: %q}`, n, tc.json))
			s.create(t, fmt.Sprintf(`apiVersion: armorplane.io/v1beta1
kind: ProviderConfig
metadata: {name: %s, namespace: tenant-a}
spec:
  projectID: %s
  endpoint: %s
  credentials: {source: Secret, secretRef: {name: %s, key: key.json}}`, n, projA, s.emuEndpoint, n))
			o := s.create(t, fmt.Sprintf(`apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: %s, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: %s}
  forProvider: {description: a tenant's bait}`, n, n))
			refused := s.syncedFalse(o, tc.want...)
			s.Eventually(t, settle, "tenant-a/"+n+" refused", refused)
			s.holds(t, window, "tenant-a/"+n+" refused, its token server sent nothing", all(refused, ts.nothing, s.notInGCP(projA, n)))
		})
	}
}

// testEndpointNotGranted: a namespaced ProviderConfig whose endpoint names
// a server the platform team did not grant (here the tenant's own, which
// could as well be the metadata server or the cluster's API server) is
// refused before the provider reads its Secret, so the namespace's token
// goes nowhere.
func (s *suite) testEndpointNotGranted(t *testing.T) {
	ts := s.newTenantServer(t)
	s.create(t, fmt.Sprintf(`apiVersion: armorplane.io/v1beta1
kind: ProviderConfig
metadata: {name: own-endpoint, namespace: tenant-a}
spec:
  projectID: %s
  endpoint: %s/compute/v1/
  credentials: {source: AccessToken, secretRef: {name: gcp-token, key: token}}`, projA, ts.url))
	o := s.create(t, `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: own-endpoint, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ProviderConfig, name: own-endpoint}
  forProvider: {description: sent elsewhere}`)
	refused := s.syncedFalse(o, "ProviderConfig tenant-a/own-endpoint sets spec.endpoint", "--namespaced-endpoint")
	s.Eventually(t, settle, "tenant-a/own-endpoint refused", refused)
	s.holds(t, window, "tenant-a/own-endpoint refused, the tenant's server received nothing", all(refused, ts.nothing))
}

// testProjectNotGranted: a ClusterProviderConfig serves the projects it
// lists in allowedProjects (by default its own projectID) and no other,
// even one its token may write: tenant-a naming proj-b through it is
// refused before any GCP call, while the same object naming proj-a is
// served (the positive control: the proxy sees that one's calls).
func (s *suite) testProjectNotGranted(t *testing.T) {
	const manifest = `apiVersion: cloudarmor.armorplane.io/v1beta1
kind: SecurityPolicy
metadata: {name: %s, namespace: tenant-a}
spec:
  providerConfigRef: {kind: ClusterProviderConfig, name: %s}
  forProvider: {project: %s, description: through the platform's config}`
	foreign := s.create(t, fmt.Sprintf(manifest, "foreign-project", cpcWatched, projB))
	refused := s.syncedFalse(foreign, `ClusterProviderConfig "`+cpcWatched+`" may not name project "`+projB+`"`, "spec.allowedProjects")
	s.Eventually(t, settle, "tenant-a/foreign-project refused", refused)
	s.holds(t, window, "tenant-a/foreign-project refused, making no GCP call", all(refused, s.notInGCP(projB, "foreign-project"), s.noCalls(projB, "foreign-project")))

	own := s.create(t, fmt.Sprintf(manifest, "own-project", cpcWatched, projA))
	s.Eventually(t, settle, "tenant-a/own-project Ready", all(s.ready(own), s.descriptionIs(projA, "own-project", "through the platform's config")))
	if len(s.proxy.Calls(projA, "own-project")) == 0 {
		t.Fatal("the counting proxy saw no call from the admitted object: the no-call assertion above proves nothing")
	}
}

// serviceAccountKey is a service account key, with a fresh RSA key, whose
// token_uri is tokenURI: valid enough that the auth library would sign an
// assertion and send it there.
func serviceAccountKey(t *testing.T, tokenURI string) []byte {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(k)
	if err != nil {
		t.Fatal(err)
	}
	return mustJSON(t, map[string]any{"type": "service_account", "project_id": projA, "private_key_id": "kid",
		"private_key":  string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email": "tenant@" + projA + ".iam.gserviceaccount.com", "client_id": "1", "token_uri": tokenURI})
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
