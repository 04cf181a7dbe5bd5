package gcp

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

const secretMarker = "s3cr3t-MATERIAL"

func TestClientOptionsErrors(t *testing.T) {
	cases := map[string]struct {
		reason string
		creds  Credentials
		want   error
	}{
		"MalformedJSON": {
			reason: "Malformed JSON is rejected without echoing it.",
			creds:  Credentials{Source: SourceSecret, Data: []byte(`{"type":"service_account","private_key":"` + secretMarker)},
			want:   errors.New(errCredsNotJSON),
		},
		"NotAnObject": {
			reason: "A bare token in a Secret meant for JSON is rejected without echoing it.",
			creds:  Credentials{Source: SourceFilesystem, Data: []byte(secretMarker)},
			want:   errors.New(errCredsNotJSON),
		},
		"NoType": {
			reason: "JSON without a type cannot be passed to the auth library.",
			creds:  Credentials{Source: SourceEnvironment, Data: []byte(`{"private_key":"` + secretMarker + `"}`)},
			want:   errors.New(errCredsNoType),
		},
		"UnknownType": {
			reason: "An unsupported type is named generically, not echoed.",
			creds:  Credentials{Source: SourceSecret, Data: []byte(`{"type":"` + secretMarker + `"}`)},
			want:   errors.New(errCredsUnknownType),
		},
		"Empty": {
			reason: "An empty Secret is reported as such.",
			creds:  Credentials{Source: SourceSecret, Data: []byte("  \n")},
			want:   errors.New(errCredsEmpty),
		},
		"EmptyToken": {
			reason: "An empty access token is rejected.",
			creds:  Credentials{Source: SourceAccessToken, Data: []byte("\n")},
			want:   errors.New(errCredsEmptyToken),
		},
		"NoTarget": {
			reason: "Impersonation needs a service account.",
			creds:  Credentials{Source: SourceImpersonateServiceAccount},
			want:   errors.New(errCredsNoTarget),
		},
		"ImpersonateBadBase": {
			reason: "Impersonation from malformed base credentials fails without echoing them.",
			creds:  Credentials{Source: SourceImpersonateServiceAccount, ImpersonateServiceAccount: "sa@p.iam.gserviceaccount.com", Data: []byte(secretMarker)},
			want:   errors.New(errCredsNotJSON),
		},
		"UnknownSource": {
			reason: "An unknown source is rejected.",
			creds:  Credentials{Source: "Upbound"},
			want:   errors.New(errCredsUnknownSource),
		},
		"BadEndpoint": {
			reason: "An endpoint must be an absolute http(s) URL.",
			creds:  Credentials{Source: SourceNone, Endpoint: "127.0.0.1:8080"},
			want:   errors.New(errEndpointInvalid),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ClientOptions(context.Background(), tc.creds)
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nClientOptions(...): -want, +got:\n%s", tc.reason, diff)
			}
			if err != nil && strings.Contains(err.Error(), secretMarker) {
				t.Errorf("\n%s\nthe error leaks credential bytes: %q", tc.reason, err)
			}
		})
	}
}

func TestClientOptionsSources(t *testing.T) {
	cases := map[string]struct {
		reason string
		creds  Credentials
	}{
		"ServiceAccount": {
			reason: "A service account key is accepted.",
			creds:  Credentials{Source: SourceSecret, Data: []byte(`{"type":"service_account","client_email":"a@b"}`)},
		},
		"ExternalAccount": {
			reason: "A workload identity federation config reading a source the platform team allowed is accepted.",
			creds: Credentials{Source: SourceFilesystem, Grants: Grants{ExternalSources: []string{"/var/run/secrets/tokens/gcp/token"}},
				Data: []byte(`{"type":"external_account","audience":"x","credential_source":{"file":"/var/run/secrets/tokens/gcp/token"}}`)},
		},
		"AuthorizedUser": {
			reason: "User credentials are accepted.",
			creds:  Credentials{Source: SourceEnvironment, Data: []byte(`{"type":"authorized_user"}`)},
		},
		"ImpersonatedServiceAccount": {
			reason: "An impersonated service account file is accepted.",
			creds:  Credentials{Source: SourceSecret, Data: []byte(`{"type":"impersonated_service_account"}`)},
		},
		"InjectedIdentity": {
			reason: "Injected identity needs nothing up front.",
			creds:  Credentials{Source: SourceInjectedIdentity, Data: []byte("ignored")},
		},
		"ImpersonateFromKey": {
			reason: "Impersonation can start from a key; nothing is fetched up front.",
			creds: Credentials{Source: SourceImpersonateServiceAccount, ImpersonateServiceAccount: "sa@p.iam.gserviceaccount.com",
				Data: serviceAccountKey(t, "https://oauth2.googleapis.com/token")},
		},
		"AccessToken": {
			reason: "An access token is accepted.",
			creds:  Credentials{Source: SourceAccessToken, Data: []byte("ya29.token\n")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ClientOptions(context.Background(), tc.creds); err != nil {
				t.Errorf("\n%s\nClientOptions(...): %v", tc.reason, err)
			}
		})
	}
}

func TestNormalizeEndpoint(t *testing.T) {
	type want struct {
		ep  string
		err error
	}
	cases := map[string]struct {
		reason string
		in     string
		want   want
	}{
		"Host":          {reason: "A bare host gets compute's base path.", in: "http://127.0.0.1:8080", want: want{ep: "http://127.0.0.1:8080/compute/v1/"}},
		"HostSlash":     {reason: "A host with / gets compute's base path.", in: "http://127.0.0.1:8080/", want: want{ep: "http://127.0.0.1:8080/compute/v1/"}},
		"BasePath":      {reason: "A full base path gets a trailing slash.", in: "https://compute.example.com/compute/v1", want: want{ep: "https://compute.example.com/compute/v1/"}},
		"CustomPath":    {reason: "Any path is used as the whole base path.", in: " https://psc.example.com/x/ ", want: want{ep: "https://psc.example.com/x/"}},
		"NoScheme":      {reason: "A host without a scheme is rejected.", in: "compute.example.com", want: want{err: errors.New(errEndpointInvalid)}},
		"UnknownScheme": {reason: "Only http and https are accepted.", in: "ftp://x/", want: want{err: errors.New(errEndpointInvalid)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ep, err := NormalizeEndpoint(tc.in)
			if diff := cmp.Diff(tc.want, want{ep: ep, err: err}, cmp.AllowUnexported(want{}), test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\nNormalizeEndpoint(%q): -want, +got:\n%s", tc.reason, tc.in, diff)
			}
		})
	}
}

func TestNetworkSecurityEndpoint(t *testing.T) {
	cases := map[string]struct {
		reason string
		in     string
		want   string
	}{
		"Host":       {reason: "One server serves compute under /compute/v1/ and address groups under /v1/.", in: "http://127.0.0.1:8080", want: "http://127.0.0.1:8080/"},
		"BasePath":   {reason: "compute's own base path is dropped.", in: "https://proxy.example.com/compute/v1", want: "https://proxy.example.com/"},
		"CustomPath": {reason: "Any other path is shared by both APIs.", in: "https://psc.example.com/x/", want: "https://psc.example.com/x/"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := NetworkSecurityEndpoint(tc.in)
			if err != nil {
				t.Fatalf("%s\nNetworkSecurityEndpoint(%q): %v", tc.reason, tc.in, err)
			}
			if got != tc.want {
				t.Errorf("%s\nNetworkSecurityEndpoint(%q): want %q, got %q", tc.reason, tc.in, tc.want, got)
			}
		})
	}
}

// seenRequest is what the test server learned from a request.
type seenRequest struct {
	Path, Authorization string
	UserAgent           bool
}

// TestClientForCredentials drives the real compute client through our
// options, checking what reaches the endpoint.
func TestClientForCredentials(t *testing.T) {
	var mu sync.Mutex
	var seen []seenRequest
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/token" { // The service account's token_uri.
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"access_token":"from-token-uri","token_type":"Bearer","expires_in":3600}`))
			return
		}
		mu.Lock()
		seen = append(seen, seenRequest{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"),
			UserAgent: strings.Contains(r.Header.Get("User-Agent"), "provider-cloudarmor/")})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"n"}`))
	}))
	defer srv.Close()

	cases := map[string]struct {
		reason string
		creds  Credentials
		want   seenRequest
	}{
		"AccessToken": {
			reason: "A static token is sent as a bearer token to the bare-host endpoint.",
			creds:  Credentials{Source: SourceAccessToken, Data: []byte(" tok \n"), Endpoint: srv.URL},
			want:   seenRequest{Path: "/compute/v1/projects/p/global/securityPolicies/n", Authorization: "Bearer tok", UserAgent: true},
		},
		"None": {
			reason: "No credentials send no Authorization header.",
			creds:  Credentials{Source: SourceNone, Endpoint: srv.URL + "/compute/v1"},
			want:   seenRequest{Path: "/compute/v1/projects/p/global/securityPolicies/n", UserAgent: true},
		},
		"ServiceAccount": {
			reason: "A service account key yields a bearer token (self-signed or from token_uri). The token_uri is this test's server, which only the operator's own credentials may name.",
			creds:  Credentials{Source: SourceSecret, Data: serviceAccountKey(t, srv.URL+"/token"), Endpoint: srv.URL, Trust: TrustOperator},
			want:   seenRequest{Path: "/compute/v1/projects/p/global/securityPolicies/n", Authorization: "Bearer", UserAgent: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			seen = nil
			mu.Unlock()
			cl, err := NewClientForCredentials(context.Background(), tc.creds, nil, nil)
			if err != nil {
				t.Fatalf("NewClientForCredentials: %v", err)
			}
			if _, err := cl.Policies("p", "").GetFresh(context.Background(), "n"); err != nil {
				t.Fatalf("GetFresh: %v", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 {
				t.Fatalf("want one API request, got %+v", seen)
			}
			got := seen[0]
			if tc.want.Authorization == "Bearer" && strings.HasPrefix(got.Authorization, "Bearer ") {
				got.Authorization = "Bearer" // Self-signed JWTs differ every time.
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\n-want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// serviceAccountKey returns a service account key file with a fresh RSA key
// whose token_uri is tokenURI.
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
	b, err := json.Marshal(map[string]string{
		"type":           "service_account",
		"project_id":     "p",
		"private_key_id": "kid",
		"private_key":    string(pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der})),
		"client_email":   "sa@p.iam.gserviceaccount.com",
		"client_id":      "1",
		"token_uri":      tokenURI,
	})
	if err != nil {
		t.Fatal(err)
	}
	return b
}
