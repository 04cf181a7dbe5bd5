package app

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// recordingReader stands in for the informer cache and records what is read
// through it.
type recordingReader struct{ read []string }

func (r *recordingReader) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	r.read = append(r.read, key.Name)
	return nil
}

func (r *recordingReader) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return nil
}

// A cached Get of a Secret would start an informer on every Secret in the
// cluster. The manager's client reads Secrets (and Events and Leases) from
// the API server, and managed resources from the cache.
func TestClientReadsRarelyUsedKindsUncached(t *testing.T) {
	s, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	var live []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		live = append(live, r.URL.Path)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"creds","namespace":"ns"}}`))
	}))
	defer srv.Close()

	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(corev1.SchemeGroupVersion.WithKind("Secret"), meta.RESTScopeNamespace)
	mapper.Add(v1beta1.SchemeGroupVersion.WithKind("SecurityPolicyRule"), meta.RESTScopeNamespace)
	cached := &recordingReader{}
	o := clientOptions()
	o.Scheme, o.Mapper, o.Cache.Reader = s, mapper, cached
	c, err := client.New(&rest.Config{Host: srv.URL}, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "creds"}, &corev1.Secret{}); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: "ns", Name: "rule"}, &v1beta1.SecurityPolicyRule{}); err != nil {
		t.Fatal(err)
	}
	if len(live) != 1 || live[0] != "/api/v1/namespaces/ns/secrets/creds" {
		t.Errorf("API server reads: got %v, want the Secret only", live)
	}
	if len(cached.read) != 1 || cached.read[0] != "rule" {
		t.Errorf("cache reads: got %v, want the SecurityPolicyRule only", cached.read)
	}
	for _, o := range uncached() {
		if _, _, err := s.ObjectKinds(o); err != nil {
			t.Errorf("uncached kind %T is not in the scheme: %v", o, err)
		}
	}
}
