package gcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"

	"golang.org/x/oauth2"
	"golang.org/x/oauth2/google"
	"google.golang.org/api/impersonate"
	"google.golang.org/api/option"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A CredentialsSource says where a ProviderConfig's credentials come from.
// The names mirror provider-upjet-gcp's credentials.source enum.
type CredentialsSource string

// Credentials sources.
const (
	// SourceSecret: Data is a credentials JSON file read from a Secret.
	SourceSecret CredentialsSource = "Secret"
	// SourceEnvironment: Data is a credentials JSON file read from an
	// environment variable.
	SourceEnvironment CredentialsSource = "Environment"
	// SourceFilesystem: Data is a credentials JSON file read from a file.
	SourceFilesystem CredentialsSource = "Filesystem"
	// SourceInjectedIdentity: Application Default Credentials, e.g. GKE
	// Workload Identity. Data is ignored.
	SourceInjectedIdentity CredentialsSource = "InjectedIdentity"
	// SourceImpersonateServiceAccount: impersonate
	// ImpersonateServiceAccount, starting from Data (a credentials JSON
	// file) if given, else from Application Default Credentials.
	SourceImpersonateServiceAccount CredentialsSource = "ImpersonateServiceAccount"
	// SourceAccessToken: Data is an OAuth2 access token. It is never
	// refreshed; whoever writes the Secret must rotate it.
	SourceAccessToken CredentialsSource = "AccessToken"
	// SourceNone sends no credentials at all. It exists for the local
	// emulator and tests, like provider-gcp's withoutAuthentication.
	SourceNone CredentialsSource = "None"
)

// ScopeCloudPlatform is the OAuth2 scope we request for impersonated tokens.
const ScopeCloudPlatform = "https://www.googleapis.com/auth/cloud-platform"

// Version is the provider version reported in the User-Agent header. The
// provider binary sets it at start-up (or with -ldflags -X).
var Version = "dev"

// Error strings. None of them may include credential bytes.
const (
	errCredsNotJSON       = "cannot parse credentials: not a JSON object"
	errCredsNoType        = "cannot parse credentials: the JSON has no \"type\" field"
	errCredsUnknownType   = "cannot parse credentials: unsupported \"type\"; want service_account, external_account, authorized_user or impersonated_service_account"
	errCredsEmpty         = "cannot use credentials: no credentials data"
	errCredsEmptyToken    = "cannot use credentials: the access token is empty"
	errCredsNoTarget      = "cannot impersonate service account: no service account given"
	errCredsImpersonate   = "cannot impersonate service account"
	errCredsUnknownSource = "cannot use credentials: unknown source"
	errEndpointInvalid    = "cannot parse endpoint: want an absolute http or https URL"
	errCredsDefault       = "cannot find Application Default Credentials"
	errCredsNoToken       = "cannot get an access token: credentials source None sends no credentials"
)

const (
	// computeBasePath is GCP's own base path below the host.
	computeBasePath = "compute/v1/"
	// userAgentProductPrefix starts our User-Agent, so GCP audit logs and
	// the emulator can tell the provider's traffic apart.
	userAgentProductPrefix = "provider-cloudarmor/"
)

// Credentials are everything needed to build a compute client, as plain
// data. Controllers fill them from a ProviderConfig.
type Credentials struct {
	// Source says how to interpret Data.
	Source CredentialsSource
	// Data is the secret, environment or file content: credentials JSON,
	// or an access token for SourceAccessToken.
	Data []byte
	// ImpersonateServiceAccount is the email of the service account to
	// impersonate, for SourceImpersonateServiceAccount.
	ImpersonateServiceAccount string
	// Endpoint overrides the compute API base URL (private endpoints, the
	// emulator). See NormalizeEndpoint.
	Endpoint string
	// Trust says who wrote Data, and so which credentials JSON it may hold
	// (see Trust). The zero value is a ClusterProviderConfig's.
	Trust Trust
	// Grants are what the platform team allowed a credentials JSON to name
	// besides Google's hosts.
	Grants Grants
}

// Hash returns a SHA-256 of every field, for IdentityKey: equal hashes mean
// clients built from the two Credentials behave the same.
func (c Credentials) Hash() string {
	return IdentityKey(string(c.Source), string(c.Data), c.ImpersonateServiceAccount, c.Endpoint, c.Trust.String(),
		strings.Join(c.Grants.ExternalSources, "\n"), strings.Join(c.Grants.TokenURLs, "\n"))
}

// IdentityKey hashes parts into a fixed-length key for a ClientCache. Parts
// are length-prefixed, so ("ab","c") and ("a","bc") differ. Typical parts:
// the ProviderConfig UID and Credentials.Hash().
func IdentityKey(parts ...string) string {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		l := uint64(len(p))
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// NetworkSecurityClientOptions returns the options for
// networksecurity.NewService: ClientOptions with the endpoint made the
// networksecurity base path (see NetworkSecurityEndpoint).
func NetworkSecurityClientOptions(ctx context.Context, c Credentials) ([]option.ClientOption, error) {
	if c.Endpoint == "" {
		return ClientOptions(ctx, c)
	}
	ep, err := NetworkSecurityEndpoint(c.Endpoint)
	if err != nil {
		return nil, err
	}
	c.Endpoint = ""
	opts, err := ClientOptions(ctx, c)
	if err != nil {
		return nil, err
	}
	return append(opts, option.WithEndpoint(ep)), nil
}

// NetworkSecurityEndpoint turns a user's endpoint into the networksecurity
// client's base path. GCP serves compute at compute.googleapis.com/compute/v1/
// and address groups at networksecurity.googleapis.com/v1/; an endpoint
// override names one server for both (an emulator, a proxy), so the compute
// base path NormalizeEndpoint makes loses its "compute/v1/" and the rest is
// the networksecurity base path: http://127.0.0.1:8080 serves compute under
// /compute/v1/ and address groups under /v1/.
func NetworkSecurityEndpoint(endpoint string) (string, error) {
	ep, err := NormalizeEndpoint(endpoint)
	if err != nil {
		return "", err
	}
	return strings.TrimSuffix(ep, computeBasePath), nil
}

// ClientOptions returns the options for compute.NewService. Token sources
// are built on a context detached from ctx's cancellation: they outlive the
// reconcile that builds them and refresh tokens long after it returns.
// Errors never contain credential bytes.
func ClientOptions(ctx context.Context, c Credentials) ([]option.ClientOption, error) {
	ctx = context.WithoutCancel(ctx)
	opts := []option.ClientOption{option.WithUserAgent(userAgentProductPrefix + Version)}
	if c.Endpoint != "" {
		ep, err := NormalizeEndpoint(c.Endpoint)
		if err != nil {
			return nil, err
		}
		opts = append(opts, option.WithEndpoint(ep))
	}
	auth, err := authOptions(ctx, c)
	if err != nil {
		return nil, err
	}
	return append(opts, auth...), nil
}

// authOptions returns the options that carry c's credentials.
func authOptions(ctx context.Context, c Credentials) ([]option.ClientOption, error) {
	switch c.Source {
	case SourceSecret, SourceEnvironment, SourceFilesystem:
		o, err := jsonCredentials(c)
		if err != nil {
			return nil, err
		}
		return []option.ClientOption{o}, nil
	case SourceInjectedIdentity:
		return nil, nil
	case SourceImpersonateServiceAccount:
		return impersonation(ctx, c)
	case SourceAccessToken:
		return accessToken(c.Data)
	case SourceNone:
		return []option.ClientOption{option.WithoutAuthentication()}, nil
	}
	return nil, errors.New(errCredsUnknownSource)
}

// jsonCredentials checks the JSON's "type" and passes the matching
// credentials type, as WithAuthCredentialsJSON requires. Malformed JSON gets
// our own message: encoding/json's syntax errors quote input bytes.
func jsonCredentials(c Credentials) (option.ClientOption, error) {
	data, t, err := typedJSON(c)
	if err != nil {
		return nil, err
	}
	return option.WithAuthCredentialsJSON(t, data), nil
}

// typedJSON returns c's credentials JSON, trimmed, and its "type", once the
// JSON is one c's writer may use (checkTrust).
func typedJSON(c Credentials) ([]byte, option.CredentialsType, error) {
	data := bytes.TrimSpace(c.Data)
	if len(data) == 0 {
		return nil, "", errors.New(errCredsEmpty)
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, "", errors.New(errCredsNotJSON)
	}
	t, err := credentialsType(head.Type)
	if err != nil {
		return nil, "", err
	}
	return data, t, checkTrust(data, t, c.Trust, c.Grants)
}

func credentialsType(t string) (option.CredentialsType, error) {
	switch t {
	case "":
		return "", errors.New(errCredsNoType)
	case string(option.ServiceAccount):
		return option.ServiceAccount, nil
	case string(option.ExternalAccount):
		return option.ExternalAccount, nil
	case string(option.AuthorizedUser):
		return option.AuthorizedUser, nil
	case string(option.ImpersonatedServiceAccount):
		return option.ImpersonatedServiceAccount, nil
	}
	return "", errors.New(errCredsUnknownType)
}

// impersonation passes a token source for the target service account.
func impersonation(ctx context.Context, c Credentials) ([]option.ClientOption, error) {
	ts, err := impersonatedTokenSource(ctx, c)
	if err != nil {
		return nil, err
	}
	return []option.ClientOption{option.WithTokenSource(ts)}, nil
}

// impersonatedTokenSource builds a token source for the target service
// account from Data, or from Application Default Credentials when Data is
// empty.
func impersonatedTokenSource(ctx context.Context, c Credentials) (oauth2.TokenSource, error) {
	target := strings.TrimSpace(c.ImpersonateServiceAccount)
	if target == "" {
		return nil, errors.New(errCredsNoTarget)
	}
	var base []option.ClientOption
	if len(bytes.TrimSpace(c.Data)) > 0 {
		o, err := jsonCredentials(c)
		if err != nil {
			return nil, err
		}
		base = append(base, o)
	}
	ts, err := impersonate.CredentialsTokenSource(ctx, impersonate.CredentialsConfig{
		TargetPrincipal: target,
		Scopes:          []string{ScopeCloudPlatform},
	}, base...)
	if err != nil {
		// The library's errors name files and fields, never key bytes.
		return nil, errors.Wrap(err, errCredsImpersonate)
	}
	return ts, nil
}

func accessToken(data []byte) ([]option.ClientOption, error) {
	tok := strings.TrimSpace(string(data))
	if tok == "" {
		return nil, errors.New(errCredsEmptyToken)
	}
	ts := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok, TokenType: "Bearer"})
	return []option.ClientOption{option.WithTokenSource(ts)}, nil
}

// TokenSource returns a source of Google OAuth2 access tokens of c, for a
// server that takes them but is not reached through a GCP client library: a
// GKE cluster's API server accepts one as a bearer token. Source None has no
// token and is refused. Errors never contain credential bytes.
func TokenSource(ctx context.Context, c Credentials) (oauth2.TokenSource, error) {
	ctx = context.WithoutCancel(ctx)
	switch c.Source {
	case SourceSecret, SourceEnvironment, SourceFilesystem:
		data, t, err := typedJSON(c)
		if err != nil {
			return nil, err
		}
		creds, err := google.CredentialsFromJSONWithType(ctx, data, google.CredentialsType(t), ScopeCloudPlatform)
		if err != nil {
			return nil, errors.New(errCredsNotJSON)
		}
		return creds.TokenSource, nil
	case SourceInjectedIdentity:
		creds, err := google.FindDefaultCredentials(ctx, ScopeCloudPlatform)
		if err != nil {
			return nil, errors.Wrap(err, errCredsDefault)
		}
		return creds.TokenSource, nil
	case SourceImpersonateServiceAccount:
		return impersonatedTokenSource(ctx, c)
	case SourceAccessToken:
		tok := strings.TrimSpace(string(c.Data))
		if tok == "" {
			return nil, errors.New(errCredsEmptyToken)
		}
		return oauth2.StaticTokenSource(&oauth2.Token{AccessToken: tok, TokenType: "Bearer"}), nil
	case SourceNone:
		return nil, errors.New(errCredsNoToken)
	}
	return nil, errors.New(errCredsUnknownSource)
}

// NormalizeEndpoint turns a user's endpoint into the compute client's base
// path, which must end in "/". Both forms are accepted:
//
//   - a bare host URL (no path, or "/"), e.g. http://127.0.0.1:8080, gets
//     "/compute/v1/" appended, as GCP's own base path has it;
//   - a URL with a path, e.g. https://compute.example.com/compute/v1 or
//     http://127.0.0.1:8080/prefix/, is used as the whole base path, with a
//     trailing "/" added if missing.
func NormalizeEndpoint(endpoint string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(endpoint))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", errors.New(errEndpointInvalid)
	}
	u.RawQuery, u.Fragment = "", ""
	switch {
	case u.Path == "" || u.Path == "/":
		u.Path = "/" + computeBasePath
	case !strings.HasSuffix(u.Path, "/"):
		u.Path += "/"
	}
	u.RawPath = ""
	return u.String(), nil
}
