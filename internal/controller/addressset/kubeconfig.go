package addressset

import (
	"net/http"
	"net/url"

	"golang.org/x/oauth2"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
)

// Messages about a kubeconfig. None quotes the kubeconfig: a parser's error
// may echo the bytes around the fault, which may be a key.
const (
	errKubeconfigParse    = "does not parse as a kubeconfig"
	errKubeconfigContext  = "has no current-context, or its current-context names no context"
	errKubeconfigCluster  = "its current context names no cluster the kubeconfig defines"
	errKubeconfigServer   = "its cluster's server is not an https URL without user or password"
	errKubeconfigHTTP     = "its cluster's server is http, which is refused: the provider reads another cluster only over https with the server's certificate verified, so that no one on the path reads its credentials or answers as the cluster. Use the https URL and embed the cluster's CA (certificate-authority-data)"
	errKubeconfigSkipTLS  = "its cluster sets insecure-skip-tls-verify, which is refused: anyone on the path could answer as the cluster and receive its credentials. Embed the cluster's CA (certificate-authority-data) instead"
	errKubeconfigProxy    = "its cluster names a proxy-url, which is refused: the provider connects to another cluster only directly, to an address its dial policy has checked. Remove proxy-url; a cluster reachable only through a proxy is for the platform team to open"
	errKubeconfigExec     = "its user runs an exec plugin, which is refused: the provider's pod has no gcloud or other cloud CLI to run. Use a kubeconfig with a token or a client certificate, or identity ProviderConfig for a GKE cluster"
	errKubeconfigProvider = "its user names an auth-provider, which is refused: the provider's pod has no gcloud or other cloud CLI to refresh it. Use a kubeconfig with a token or a client certificate, or identity ProviderConfig for a GKE cluster"
	errKubeconfigFile     = "its %s names a file, which is refused: the file would be read from the provider's own filesystem. Embed the data instead (token, client-certificate-data, client-key-data, certificate-authority-data)"
	errKubeconfigClient   = "cannot build a client from it"
)

// currentCluster returns the cluster and user of the kubeconfig's current
// context; the user may be nil.
func currentCluster(data []byte) (*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, nil, nil, errors.New(errKubeconfigParse)
	}
	kctx := cfg.Contexts[cfg.CurrentContext]
	if kctx == nil {
		return nil, nil, nil, errors.New(errKubeconfigContext)
	}
	cl := cfg.Clusters[kctx.Cluster]
	if cl == nil {
		return nil, nil, nil, errors.New(errKubeconfigCluster)
	}
	if err := checkCluster(cl); err != nil {
		return nil, nil, nil, err
	}
	return cfg, cl, cfg.AuthInfos[kctx.AuthInfo], nil
}

// checkCluster refuses a cluster the provider would reach other than
// directly, over https, with its certificate verified, whatever the
// identity: a kubeconfig's token or client key is a credential as much as
// a Google access token, and the Nodes' addresses become firewall rules.
func checkCluster(cl *clientcmdapi.Cluster) error {
	u, err := url.Parse(cl.Server)
	switch {
	case err == nil && u.Scheme == "http":
		return errors.New(errKubeconfigHTTP)
	case err != nil || u.Scheme != "https" || u.Host == "" || u.User != nil:
		return errors.New(errKubeconfigServer)
	case cl.InsecureSkipTLSVerify:
		return errors.New(errKubeconfigSkipTLS)
	case cl.ProxyURL != "":
		return errors.New(errKubeconfigProxy)
	case cl.CertificateAuthority != "":
		return errors.Errorf(errKubeconfigFile, "certificate-authority")
	}
	return nil
}

// serverHost is the host (and port) of the kubeconfig's server, which
// currentCluster has checked.
func serverHost(rc *rest.Config) string {
	u, err := url.Parse(rc.Host)
	if err != nil {
		return rc.Host
	}
	return u.Host
}

// kubeconfigConfig is the client configuration of the kubeconfig's current
// context, authenticated as its user: a token or a client certificate, both
// embedded. What the provider's pod cannot do (exec plugins, auth providers)
// and what would read its own files is refused, with why.
func kubeconfigConfig(data []byte) (*rest.Config, error) {
	cfg, _, user, err := currentCluster(data)
	if err != nil {
		return nil, err
	}
	if err := checkUser(user); err != nil {
		return nil, err
	}
	rc, err := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, errors.New(errKubeconfigClient)
	}
	return rc, nil
}

// checkUser refuses what the provider's pod cannot run and files it would
// read from its own filesystem: a tenant's kubeconfig naming the provider's
// ServiceAccount token file would send it to the tenant's server.
func checkUser(u *clientcmdapi.AuthInfo) error {
	switch {
	case u == nil:
		return nil
	case u.Exec != nil:
		return errors.New(errKubeconfigExec)
	case u.AuthProvider != nil:
		return errors.New(errKubeconfigProvider)
	case u.TokenFile != "":
		return errors.Errorf(errKubeconfigFile, "user's tokenFile")
	case u.ClientCertificate != "":
		return errors.Errorf(errKubeconfigFile, "user's client-certificate")
	case u.ClientKey != "":
		return errors.Errorf(errKubeconfigFile, "user's client-key")
	}
	return nil
}

// providerConfigConfig is the client configuration for identity
// ProviderConfig: only the server, its CA and TLS server name come from the
// kubeconfig (its user, often a gcloud exec plugin, is ignored), and every
// request carries an access token of ts, as a GKE API server accepts.
func providerConfigConfig(data []byte, ts oauth2.TokenSource) (*rest.Config, error) {
	_, cl, _, err := currentCluster(data)
	if err != nil {
		return nil, err
	}
	rc := &rest.Config{
		Host: cl.Server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:     cl.CertificateAuthorityData,
			ServerName: cl.TLSServerName,
		},
	}
	src := oauth2.ReuseTokenSource(nil, ts)
	rc.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return &oauth2.Transport{Source: src, Base: rt}
	}
	return rc, nil
}
