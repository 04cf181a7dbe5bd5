package validatecmd

import (
	"os"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// Credentials are the command's counterparts of a ProviderConfig's
// credential sources. With none set the command uses Application Default
// Credentials, like the InjectedIdentity source.
type Credentials struct {
	// CredentialsFile is a credentials JSON file (a service account key,
	// external account or authorized user), like the Filesystem source.
	CredentialsFile string
	// AccessTokenFile holds an OAuth2 access token, like the AccessToken
	// source.
	AccessTokenFile string
	// ImpersonateServiceAccount is the email of a service account to act
	// as, starting from CredentialsFile if set, else from Application
	// Default Credentials, like the ImpersonateServiceAccount source.
	ImpersonateServiceAccount string
}

// GCPCredentials are the credentials the options name, reaching endpoint
// ("": GCP's), as a ProviderConfig's would; the test command's --live
// reads GCP with them too. Errors name the option and the file, never
// their content.
func (c Credentials) GCPCredentials(endpoint string) (gcp.Credentials, error) {
	out := gcp.Credentials{Source: gcp.SourceInjectedIdentity, Endpoint: endpoint, Trust: gcp.TrustOperator}
	if c.AccessTokenFile != "" && (c.CredentialsFile != "" || c.ImpersonateServiceAccount != "") {
		return out, errors.New("--access-token-file cannot be combined with --credentials-file or --impersonate-service-account")
	}
	switch {
	case c.AccessTokenFile != "":
		out.Source = gcp.SourceAccessToken
		return out, readSecret(c.AccessTokenFile, "--access-token-file", &out.Data)
	case c.ImpersonateServiceAccount != "":
		out.Source, out.ImpersonateServiceAccount = gcp.SourceImpersonateServiceAccount, c.ImpersonateServiceAccount
		if c.CredentialsFile == "" {
			return out, nil
		}
		return out, readSecret(c.CredentialsFile, "--credentials-file", &out.Data)
	case c.CredentialsFile != "":
		out.Source = gcp.SourceFilesystem
		return out, readSecret(c.CredentialsFile, "--credentials-file", &out.Data)
	}
	return out, nil
}

// readSecret reads a credentials file; its error says which option and
// file, and why, but never what the file holds.
func readSecret(path, option string, into *[]byte) error {
	b, err := os.ReadFile(path) //nolint:gosec // the file the user named
	if err != nil {
		return errors.Wrapf(err, "%s", option)
	}
	if len(b) == 0 {
		return errors.Errorf("%s: %s is empty", option, path)
	}
	*into = b
	return nil
}
