package addressset

import (
	"context"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// kubeconfigOf is a kubeconfig whose current context joins cluster and user.
func kubeconfigOf(t *testing.T, cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) []byte {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = cluster
	cfg.AuthInfos["u"] = user
	cfg.Contexts["ctx"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	cfg.CurrentContext = "ctx"
	data, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestKubeconfigConfig(t *testing.T) {
	server := &clientcmdapi.Cluster{Server: "https://10.0.0.1:6443", CertificateAuthorityData: []byte("ca")}
	type want struct {
		Host, Token string
		Cert, Key   []byte
		Err         string // a part of the error
	}
	cases := map[string]struct {
		reason string
		data   func(t *testing.T) []byte
		want   want
	}{
		"Token": {
			reason: "A kubeconfig with an embedded token authenticates with it.",
			data:   func(t *testing.T) []byte { return kubeconfigOf(t, server, &clientcmdapi.AuthInfo{Token: "tok"}) },
			want:   want{Host: "https://10.0.0.1:6443", Token: "tok"},
		},
		"ClientCertificate": {
			reason: "A kubeconfig with an embedded client certificate authenticates with it.",
			data: func(t *testing.T) []byte {
				return kubeconfigOf(t, server, &clientcmdapi.AuthInfo{ClientCertificateData: []byte("crt"), ClientKeyData: []byte("key")})
			},
			want: want{Host: "https://10.0.0.1:6443", Cert: []byte("crt"), Key: []byte("key")},
		},
		"Exec": {
			reason: "An exec plugin (gke-gcloud-auth-plugin) is refused: the provider's pod has no gcloud.",
			data: func(t *testing.T) []byte {
				return kubeconfigOf(t, server, &clientcmdapi.AuthInfo{Exec: &clientcmdapi.ExecConfig{Command: "gke-gcloud-auth-plugin", APIVersion: "client.authentication.k8s.io/v1beta1"}})
			},
			want: want{Err: "exec plugin, which is refused: the provider's pod has no gcloud"},
		},
		"AuthProvider": {
			reason: "An auth-provider (the old gcp one) is refused for the same reason.",
			data: func(t *testing.T) []byte {
				return kubeconfigOf(t, server, &clientcmdapi.AuthInfo{AuthProvider: &clientcmdapi.AuthProviderConfig{Name: "gcp"}})
			},
			want: want{Err: "auth-provider, which is refused"},
		},
		"TokenFile": {
			reason: "A token file would be read from the provider's own filesystem (its ServiceAccount token) and sent to the kubeconfig's server.",
			data: func(t *testing.T) []byte {
				return kubeconfigOf(t, server, &clientcmdapi.AuthInfo{TokenFile: "/var/run/secrets/kubernetes.io/serviceaccount/token"})
			},
			want: want{Err: "tokenFile names a file, which is refused"},
		},
		"ClientCertificateFile": {
			reason: "A client certificate file is refused too.",
			data: func(t *testing.T) []byte {
				return kubeconfigOf(t, server, &clientcmdapi.AuthInfo{ClientCertificate: "/tmp/crt", ClientKey: "/tmp/key"})
			},
			want: want{Err: "client-certificate names a file"},
		},
		"CAFile": {
			reason: "A CA file is refused: only embedded data is read.",
			data: func(t *testing.T) []byte {
				return kubeconfigOf(t, &clientcmdapi.Cluster{Server: "https://10.0.0.1", CertificateAuthority: "/etc/ca.crt"}, &clientcmdapi.AuthInfo{Token: "tok"})
			},
			want: want{Err: "certificate-authority names a file"},
		},
		"NoCurrentContext": {
			reason: "A kubeconfig without a current context names no cluster.",
			data: func(*testing.T) []byte {
				return []byte("apiVersion: v1\nkind: Config\nclusters: []\ncontexts: []\nusers: []\n")
			},
			want: want{Err: errKubeconfigContext},
		},
		"ServerWithPassword": {
			reason: "A server URL with a user and password is refused: the URL is shown in messages.",
			data: func(t *testing.T) []byte {
				return kubeconfigOf(t, &clientcmdapi.Cluster{Server: "https://admin:secret@10.0.0.1"}, &clientcmdapi.AuthInfo{})
			},
			want: want{Err: errKubeconfigServer},
		},
		"PlainHTTP": {
			reason: "http is refused whatever the identity: the kubeconfig's token and the Nodes' addresses would cross the network in clear.",
			data: func(t *testing.T) []byte {
				return kubeconfigOf(t, &clientcmdapi.Cluster{Server: "http://10.0.0.1:8080"}, &clientcmdapi.AuthInfo{Token: "tok"})
			},
			want: want{Err: errKubeconfigHTTP},
		},
		"InsecureSkipVerify": {
			reason: "A server whose certificate is not verified could be anyone on the path.",
			data: func(t *testing.T) []byte {
				return kubeconfigOf(t, &clientcmdapi.Cluster{Server: "https://10.0.0.1", InsecureSkipTLSVerify: true}, &clientcmdapi.AuthInfo{Token: "tok"})
			},
			want: want{Err: errKubeconfigSkipTLS},
		},
		"ProxyURL": {
			reason: "A proxy would connect where the dial policy never looked.",
			data: func(t *testing.T) []byte {
				return kubeconfigOf(t, &clientcmdapi.Cluster{Server: "https://10.0.0.1", CertificateAuthorityData: []byte("ca"), ProxyURL: "http://169.254.169.254:80"}, &clientcmdapi.AuthInfo{Token: "tok"})
			},
			want: want{Err: errKubeconfigProxy},
		},
		"NotAKubeconfig": {
			reason: "What does not parse is said so, without quoting it.",
			data:   func(*testing.T) []byte { return []byte("token: s3cr3t: [") },
			want:   want{Err: errKubeconfigParse},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			rc, err := kubeconfigConfig(tc.data(t))
			got := want{}
			switch {
			case err != nil && tc.want.Err != "" && strings.Contains(err.Error(), tc.want.Err):
				got.Err = tc.want.Err // the message says what it must, maybe more
			case err != nil:
				got.Err = err.Error()
			default:
				got = want{Host: rc.Host, Token: rc.BearerToken, Cert: rc.CertData, Key: rc.KeyData}
			}
			if err != nil && (strings.Contains(err.Error(), "s3cr3t") || strings.Contains(err.Error(), "secret@")) {
				t.Errorf("%s\nthe error quotes the kubeconfig: %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s\nkubeconfigConfig(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// TestProviderConfigConfig checks identity ProviderConfig: the server and CA
// come from the kubeconfig, the credentials never do, and every request
// carries the ProviderConfig's access token as a bearer token.
func TestProviderConfigConfig(t *testing.T) {
	var authz []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		authz = append(authz, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"NodeList","apiVersion":"v1","items":[]}`))
	}))
	defer srv.Close()
	ca := caOf(t, srv)
	token := oauth2.StaticTokenSource(&oauth2.Token{AccessToken: "ya29.pc-token", TokenType: "Bearer"})
	execUser := &clientcmdapi.AuthInfo{Token: "kubeconfig-token", Exec: &clientcmdapi.ExecConfig{Command: "gke-gcloud-auth-plugin"}}

	cases := map[string]struct {
		reason  string
		cluster *clientcmdapi.Cluster
		want    []string // Authorization headers the server saw
		wantErr string
	}{
		"BearerOfProviderConfig": {
			reason:  "The request carries the ProviderConfig's token, not the kubeconfig's token nor its exec plugin, which is ignored.",
			cluster: &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: ca},
			want:    []string{"Bearer ya29.pc-token"},
		},
		"PlainHTTP": {
			reason:  "A Google access token is never sent in clear.",
			cluster: &clientcmdapi.Cluster{Server: strings.Replace(srv.URL, "https:", "http:", 1)},
			wantErr: errKubeconfigHTTP,
		},
		"InsecureSkipVerify": {
			reason:  "Nor to a server the kubeconfig's CA does not verify.",
			cluster: &clientcmdapi.Cluster{Server: srv.URL, InsecureSkipTLSVerify: true},
			wantErr: errKubeconfigSkipTLS,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			authz = nil
			rc, err := providerConfigConfig(kubeconfigOf(t, tc.cluster, execUser), token)
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Fatalf("%s\nproviderConfigConfig(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if err != nil {
				return
			}
			if rc.BearerToken != "" || rc.CertData != nil || rc.ExecProvider != nil {
				t.Errorf("%s\nthe configuration kept credentials of the kubeconfig", tc.reason)
			}
			listNodes(t, rc)
			if diff := cmp.Diff(tc.want, authz); diff != "" {
				t.Errorf("%s\nAuthorization headers: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func listNodes(t *testing.T, rc *rest.Config) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// caOf is the PEM of the CA that signs srv's certificate (its own).
func caOf(t *testing.T, srv *httptest.Server) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
}
