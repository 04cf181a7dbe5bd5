package gcp

import (
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"google.golang.org/api/option"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// A Trust says who wrote a credentials JSON, and so what it may make the
// provider do. Every credentials type but service_account names files or
// URLs that the Google auth libraries read and call without checking them
// (golang.org/x/oauth2's externalaccount package says so): an
// external_account whose credential_source.file names the provider pod's
// ServiceAccount token and whose token_url names a tenant's server makes the
// provider post that token to the tenant. So a JSON is checked against who
// wrote it before any library sees it.
type Trust int

const (
	// TrustPlatform is the zero value: credentials a ClusterProviderConfig
	// names, which only the platform team writes. Every type is accepted
	// with Google's own hosts only; an external_account may read only the
	// files and URLs the platform team listed (provider flag
	// --external-account-source).
	TrustPlatform Trust = iota
	// TrustTenant is credentials a namespace wrote (a namespaced
	// ProviderConfig's Secret): only service_account keys whose token URI is
	// Google's.
	TrustTenant
	// TrustOperator is credentials of whoever runs the command (the validate
	// command's --credentials-file): nothing is checked, they are the
	// operator's own.
	TrustOperator
)

// Error strings of the trust checks. They name types, fields and hosts from
// the JSON, never key material.
const (
	errFmtTenantType     = "credentials JSON of type %q is refused for a namespaced ProviderConfig: a namespace may use only service_account keys (credentials.source Secret) or access tokens (AccessToken), because other types make the provider read files or call URLs the JSON names. Ask your platform team for a ClusterProviderConfig that admits this namespace"
	errFmtNotGoogleURL   = "credentials JSON field %s is refused: %q is not an https URL on a Google host (googleapis.com, accounts.google.com) nor a token URL the platform team allowed (provider flag --allow-token-url)"
	errFmtUniverse       = "credentials JSON field universe_domain is refused: %q is not googleapis.com"
	errExecutable        = "credentials JSON field credential_source.executable is refused: the provider runs no programs a credentials file names"
	errFmtSourceNotAllow = "credentials JSON field %s is refused: %q is not among the external account sources the platform team allowed (provider flag --external-account-source)"
	errNoCredSource      = "credentials JSON of type external_account has no credential_source file or url"
	errFmtNestedType     = "credentials JSON field source_credentials is refused: type %q; want service_account or authorized_user"
)

// googleHosts are the hosts (and their subdomains) a credentials JSON may
// send a token request to: oauth2.googleapis.com, sts.googleapis.com,
// iamcredentials.googleapis.com and the legacy accounts.google.com.
var googleHosts = []string{"googleapis.com", "accounts.google.com"}

// credentialsJSON holds the fields of a credentials JSON that name a place
// the libraries read or call.
type credentialsJSON struct {
	Type                           string            `json:"type"`
	TokenURI                       string            `json:"token_uri"`
	TokenURL                       string            `json:"token_url"`
	TokenInfoURL                   string            `json:"token_info_url"`
	RevokeURL                      string            `json:"revoke_url"`
	ServiceAccountImpersonationURL string            `json:"service_account_impersonation_url"`
	UniverseDomain                 string            `json:"universe_domain"`
	CredentialSource               *credentialSource `json:"credential_source"`
	SourceCredentials              json.RawMessage   `json:"source_credentials"`
}

type credentialSource struct {
	File                  string          `json:"file"`
	URL                   string          `json:"url"`
	Executable            json.RawMessage `json:"executable"`
	EnvironmentID         string          `json:"environment_id"`
	RegionURL             string          `json:"region_url"`
	IMDSv2SessionTokenURL string          `json:"imdsv2_session_token_url"`
}

// Grants are what the platform team allowed credentials JSON to name beyond
// Google's own hosts.
type Grants struct {
	// ExternalSources are the credential_source files and URLs (exact) an
	// external_account JSON may read its subject token from.
	ExternalSources []string
	// TokenURLs are token endpoints (exact URLs) accepted besides Google's,
	// e.g. a private endpoint or a test's token server.
	TokenURLs []string
}

// checkTrust refuses a credentials JSON that trust does not let its writer
// use, given what the platform team granted.
func checkTrust(data []byte, t option.CredentialsType, trust Trust, g Grants) error {
	if trust == TrustOperator {
		return nil
	}
	var c credentialsJSON
	if err := json.Unmarshal(data, &c); err != nil {
		return errors.New(errCredsNotJSON)
	}
	if c.UniverseDomain != "" && c.UniverseDomain != "googleapis.com" {
		return errors.Errorf(errFmtUniverse, c.UniverseDomain)
	}
	if trust == TrustTenant && t != option.ServiceAccount {
		return errors.Errorf(errFmtTenantType, c.Type)
	}
	return c.checkPlatform(g)
}

// checkPlatform checks the fields of each type that name a place to call or
// read: Google's hosts only, and for an external account a source the
// platform team allowed.
func (c credentialsJSON) checkPlatform(g Grants) error {
	urls := []struct{ field, value string }{
		{"token_uri", c.TokenURI}, {"token_url", c.TokenURL}, {"token_info_url", c.TokenInfoURL},
		{"revoke_url", c.RevokeURL}, {"service_account_impersonation_url", c.ServiceAccountImpersonationURL},
	}
	for _, u := range urls {
		if u.value != "" && !googleURL(u.value) && !slices.Contains(g.TokenURLs, u.value) {
			return errors.Errorf(errFmtNotGoogleURL, u.field, u.value)
		}
	}
	switch c.Type {
	case string(option.ExternalAccount):
		return c.CredentialSource.check(g.ExternalSources)
	case string(option.ImpersonatedServiceAccount):
		return checkSourceCredentials(c.SourceCredentials, g)
	}
	return nil
}

// checkSourceCredentials checks an impersonated service account's source
// credentials, which are a credentials JSON of their own: a service account
// key or user credentials, so they nest no further.
func checkSourceCredentials(raw json.RawMessage, g Grants) error {
	if len(raw) == 0 {
		return nil
	}
	var inner credentialsJSON
	if err := json.Unmarshal(raw, &inner); err != nil {
		return errors.New(errCredsNotJSON)
	}
	switch inner.Type {
	case string(option.ServiceAccount), string(option.AuthorizedUser):
	default:
		return errors.Errorf(errFmtNestedType, inner.Type)
	}
	if inner.UniverseDomain != "" && inner.UniverseDomain != "googleapis.com" {
		return errors.Errorf(errFmtUniverse, inner.UniverseDomain)
	}
	return inner.checkPlatform(g)
}

// check refuses a credential source that runs a program, or reads a file or
// URL the platform team did not list.
func (s *credentialSource) check(sources []string) error {
	if s == nil || (s.File == "" && s.URL == "" && s.EnvironmentID == "" && len(s.Executable) == 0) {
		return errors.New(errNoCredSource)
	}
	if len(s.Executable) > 0 && string(s.Executable) != "null" {
		return errors.New(errExecutable)
	}
	read := []struct{ field, value string }{
		{"credential_source.file", s.File},
		{"credential_source.url", s.URL},
		{"credential_source.region_url", s.RegionURL},
		{"credential_source.imdsv2_session_token_url", s.IMDSv2SessionTokenURL},
	}
	for _, r := range read {
		if r.value != "" && !slices.Contains(sources, r.value) {
			return errors.Errorf(errFmtSourceNotAllow, r.field, r.value)
		}
	}
	return nil
}

// googleURL reports whether raw is an https URL on one of Google's hosts,
// with no user information and the default port.
func googleURL(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || u.Scheme != "https" || u.User != nil || u.Port() != "" && u.Port() != "443" {
		return false
	}
	host := strings.ToLower(u.Hostname())
	for _, g := range googleHosts {
		if host == g || strings.HasSuffix(host, "."+g) {
			return true
		}
	}
	return false
}

// String names a trust for messages and tests.
func (t Trust) String() string {
	switch t {
	case TrustPlatform:
		return "platform"
	case TrustTenant:
		return "tenant"
	case TrustOperator:
		return "operator"
	}
	return fmt.Sprintf("Trust(%d)", int(t))
}
