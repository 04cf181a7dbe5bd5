package gcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/option"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
)

// jsonOf marshals v, a credentials JSON written as a map.
func jsonOf(t *testing.T, v map[string]any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCheckTrust(t *testing.T) {
	const tokenFile = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	const metadataURL = "http://169.254.169.254/computeMetadata/v1/instance/service-accounts/default/token"
	allowed := []string{"/var/run/secrets/tokens/gcp-ksa/token"}
	external := func(source map[string]any) map[string]any {
		return map[string]any{"type": "external_account", "audience": "//iam.googleapis.com/x",
			"subject_token_type": "urn:ietf:params:oauth:token-type:jwt", "token_url": "https://sts.googleapis.com/v1/token",
			"credential_source": source}
	}
	type args struct {
		json   map[string]any
		t      option.CredentialsType
		trust  Trust
		grants Grants
	}
	cases := map[string]struct {
		reason string
		args   args
		want   error
	}{
		"TenantServiceAccount": {
			reason: "A tenant's service account key with Google's token URI is accepted.",
			args:   args{json: map[string]any{"type": "service_account", "token_uri": "https://oauth2.googleapis.com/token"}, t: option.ServiceAccount, trust: TrustTenant},
		},
		"TenantServiceAccountNoTokenURI": {
			reason: "A key without token_uri uses Google's, so it is accepted.",
			args:   args{json: map[string]any{"type": "service_account"}, t: option.ServiceAccount, trust: TrustTenant},
		},
		"TenantServiceAccountForeignTokenURI": {
			reason: "A tenant's key whose token_uri names another server would send a signed assertion there.",
			args:   args{json: map[string]any{"type": "service_account", "token_uri": "https://tenant.example/token"}, t: option.ServiceAccount, trust: TrustTenant},
			want:   errors.Errorf(errFmtNotGoogleURL, "token_uri", "https://tenant.example/token"),
		},
		"TenantServiceAccountGrantedTokenURL": {
			reason: "A token URL the platform team allowed (a private endpoint, a test's token server) is accepted from a tenant's key too.",
			args: args{json: map[string]any{"type": "service_account", "token_uri": "http://127.0.0.1:9/token"}, t: option.ServiceAccount, trust: TrustTenant,
				grants: Grants{TokenURLs: []string{"http://127.0.0.1:9/token"}}},
		},
		"TenantServiceAccountHTTPGoogle": {
			reason: "Google's host over plain http is not Google's token endpoint.",
			args:   args{json: map[string]any{"type": "service_account", "token_uri": "http://oauth2.googleapis.com/token"}, t: option.ServiceAccount, trust: TrustTenant},
			want:   errors.Errorf(errFmtNotGoogleURL, "token_uri", "http://oauth2.googleapis.com/token"),
		},
		"TenantServiceAccountLookalikeHost": {
			reason: "A host that merely ends in googleapis.com text is not Google's.",
			args:   args{json: map[string]any{"type": "service_account", "token_uri": "https://evilgoogleapis.com/token"}, t: option.ServiceAccount, trust: TrustTenant},
			want:   errors.Errorf(errFmtNotGoogleURL, "token_uri", "https://evilgoogleapis.com/token"),
		},
		"TenantUniverse": {
			reason: "Another universe domain sends every call to another host.",
			args:   args{json: map[string]any{"type": "service_account", "universe_domain": "tenant.example"}, t: option.ServiceAccount, trust: TrustTenant},
			want:   errors.Errorf(errFmtUniverse, "tenant.example"),
		},
		"TenantExternalAccountFile": {
			reason: "A tenant's external account reading the pod's ServiceAccount token is refused by type.",
			args:   args{json: external(map[string]any{"file": tokenFile}), t: option.ExternalAccount, trust: TrustTenant},
			want:   errors.Errorf(errFmtTenantType, "external_account"),
		},
		"TenantAuthorizedUser": {
			reason: "A tenant may not use user credentials either: only service account keys.",
			args:   args{json: map[string]any{"type": "authorized_user"}, t: option.AuthorizedUser, trust: TrustTenant},
			want:   errors.Errorf(errFmtTenantType, "authorized_user"),
		},
		"TenantImpersonated": {
			reason: "A tenant may not use an impersonated service account JSON.",
			args:   args{json: map[string]any{"type": "impersonated_service_account"}, t: option.ImpersonatedServiceAccount, trust: TrustTenant},
			want:   errors.Errorf(errFmtTenantType, "impersonated_service_account"),
		},
		"PlatformExternalAllowedFile": {
			reason: "The platform team's external account may read a file it allowed.",
			args:   args{json: external(map[string]any{"file": allowed[0]}), t: option.ExternalAccount, grants: Grants{ExternalSources: allowed}},
		},
		"PlatformExternalFileNotAllowed": {
			reason: "Even a ClusterProviderConfig's external account may not read a file the platform team did not allow: its Secret may live in a tenant's namespace.",
			args:   args{json: external(map[string]any{"file": tokenFile}), t: option.ExternalAccount, grants: Grants{ExternalSources: allowed}},
			want:   errors.Errorf(errFmtSourceNotAllow, "credential_source.file", tokenFile),
		},
		"PlatformExternalURLNotAllowed": {
			reason: "A URL source (the metadata server's token) must be allowed too.",
			args:   args{json: external(map[string]any{"url": metadataURL}), t: option.ExternalAccount, grants: Grants{ExternalSources: allowed}},
			want:   errors.Errorf(errFmtSourceNotAllow, "credential_source.url", metadataURL),
		},
		"PlatformExternalAWSRegion": {
			reason: "An AWS source's region URL is a URL the provider calls.",
			args: args{json: external(map[string]any{"environment_id": "aws1", "region_url": "http://169.254.169.254/latest/meta-data/placement/availability-zone"}),
				t: option.ExternalAccount, grants: Grants{ExternalSources: allowed}},
			want: errors.Errorf(errFmtSourceNotAllow, "credential_source.region_url", "http://169.254.169.254/latest/meta-data/placement/availability-zone"),
		},
		"PlatformExternalExecutable": {
			reason: "No credentials JSON runs a program.",
			args:   args{json: external(map[string]any{"executable": map[string]any{"command": "/bin/sh -c id"}}), t: option.ExternalAccount},
			want:   errors.New(errExecutable),
		},
		"PlatformExternalNoSource": {
			reason: "An external account without a source cannot get a token.",
			args:   args{json: external(nil), t: option.ExternalAccount},
			want:   errors.New(errNoCredSource),
		},
		"PlatformExternalForeignTokenURL": {
			reason: "The subject token may be exchanged only at Google's STS.",
			args: args{json: map[string]any{"type": "external_account", "token_url": "https://tenant.example/token", "credential_source": map[string]any{"file": allowed[0]}},
				t: option.ExternalAccount, grants: Grants{ExternalSources: allowed}},
			want: errors.Errorf(errFmtNotGoogleURL, "token_url", "https://tenant.example/token"),
		},
		"PlatformExternalForeignImpersonation": {
			reason: "The STS token may be exchanged only at Google's IAM credentials API.",
			args: args{json: map[string]any{"type": "external_account", "service_account_impersonation_url": "https://tenant.example/sa:generateAccessToken",
				"credential_source": map[string]any{"file": allowed[0]}}, t: option.ExternalAccount, grants: Grants{ExternalSources: allowed}},
			want: errors.Errorf(errFmtNotGoogleURL, "service_account_impersonation_url", "https://tenant.example/sa:generateAccessToken"),
		},
		"PlatformImpersonatedNestedExternal": {
			reason: "An impersonated service account's source credentials are checked as well, and may not be an external account.",
			args: args{json: map[string]any{"type": "impersonated_service_account",
				"service_account_impersonation_url": "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/a@b:generateAccessToken",
				"source_credentials":                external(map[string]any{"file": tokenFile})}, t: option.ImpersonatedServiceAccount},
			want: errors.Errorf(errFmtNestedType, "external_account"),
		},
		"PlatformImpersonatedNestedForeignTokenURI": {
			reason: "The nested key's token URI must be Google's.",
			args: args{json: map[string]any{"type": "impersonated_service_account",
				"source_credentials": map[string]any{"type": "authorized_user", "token_uri": "https://tenant.example/token"}}, t: option.ImpersonatedServiceAccount},
			want: errors.Errorf(errFmtNotGoogleURL, "token_uri", "https://tenant.example/token"),
		},
		"PlatformAuthorizedUser": {
			reason: "The platform team's user credentials on Google's hosts are accepted.",
			args:   args{json: map[string]any{"type": "authorized_user", "token_uri": "https://accounts.google.com/o/oauth2/token"}, t: option.AuthorizedUser},
		},
		"OperatorAnything": {
			reason: "The validate command's operator uses their own credentials unchecked.",
			args:   args{json: external(map[string]any{"file": tokenFile}), t: option.ExternalAccount, trust: TrustOperator},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := checkTrust(jsonOf(t, tc.args.json), tc.args.t, tc.args.trust, tc.args.grants)
			if diff := cmp.Diff(tc.want, err, test.EquateErrors()); diff != "" {
				t.Errorf("\n%s\ncheckTrust(...): -want error, +got error:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestTenantCannotExfiltrate is the outcome: a namespaced ProviderConfig's
// Secret holding an external account that names a file of the provider's pod
// and the tenant's own token server must not make the provider read the file
// and post it there, whatever path builds the client or a token source.
func TestTenantCannotExfiltrate(t *testing.T) {
	const canary = "provider-pod-serviceaccount-token-canary"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(canary), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var received []string
	tenant := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		received = append(received, r.URL.Path+" "+string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"access_token":"stolen","issued_token_type":"urn:ietf:params:oauth:token-type:access_token","token_type":"Bearer","expires_in":3600}`))
	}))
	defer tenant.Close()
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"name":"n"}`))
	}))
	defer api.Close()

	hostile := map[string][]byte{
		"ExternalAccountFile": jsonOf(t, map[string]any{"type": "external_account", "audience": "a", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
			"token_url": tenant.URL + "/token", "credential_source": map[string]any{"file": file}}),
		"ExternalAccountURL": jsonOf(t, map[string]any{"type": "external_account", "audience": "a", "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
			"token_url": tenant.URL + "/token", "credential_source": map[string]any{"url": tenant.URL + "/subject"}}),
		"ServiceAccountForeignTokenURI": serviceAccountKey(t, tenant.URL+"/token"),
	}
	for name, data := range hostile {
		t.Run(name, func(t *testing.T) {
			mu.Lock()
			received = nil
			mu.Unlock()
			creds := Credentials{Source: SourceSecret, Data: data, Endpoint: api.URL, Trust: TrustTenant}
			errs := 0
			if cl, err := NewClientForCredentials(context.Background(), creds, nil, nil); err != nil {
				errs++
			} else {
				_, _ = cl.Policies("p", "").GetFresh(context.Background(), "n")
			}
			if ts, err := TokenSource(context.Background(), creds); err != nil {
				errs++
			} else {
				_, _ = ts.Token()
			}
			mu.Lock()
			defer mu.Unlock()
			for _, r := range received {
				if strings.Contains(r, canary) {
					t.Errorf("the tenant's server received the provider's file: %q", r)
				}
			}
			if len(received) != 0 {
				t.Errorf("the tenant's server received %d requests, want none: %q", len(received), received)
			}
			if errs != 2 {
				t.Errorf("want both the client and the token source refused, %d were", errs)
			}
		})
	}
}
