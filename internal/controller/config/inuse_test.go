package config

import (
	"context"
	"testing"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

var policyGVK = schema.GroupVersionKind{Group: "cloudarmor.armorplane.io", Version: "v1beta1", Kind: "SecurityPolicy"}

// innerCalls records the requests the wrapped reconciler saw.
type innerCalls struct{ got []reconcile.Request }

func (c *innerCalls) Reconcile(_ context.Context, r reconcile.Request) (reconcile.Result, error) {
	c.got = append(c.got, r)
	return reconcile.Result{}, nil
}

func deletingPC(name string) *v1beta1.ProviderConfig {
	now := metav1.Now()
	return &v1beta1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: name,
		DeletionTimestamp: &now, Finalizers: []string{"in-use.crossplane.io"}}}
}

func policyNaming(ns, name, kind, config string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(policyGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, map[string]any{"kind": kind, "name": config}, "spec", "providerConfigRef")
	return u
}

func TestKeepWhileNamed(t *testing.T) {
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team", Name: "default"}}
	type want struct {
		result reconcile.Result
		err    bool
		inner  []reconcile.Request
		// terminating is the Terminating condition's message the config
		// is left with, "" for none.
		terminating string
	}
	cases := map[string]struct {
		reason  string
		objs    []client.Object
		req     reconcile.Request
		listErr error
		want    want
	}{
		"ClusterProviderConfig": {
			reason: "A ClusterProviderConfig goes straight to crossplane-runtime's reconciler.",
			req:    reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}},
			want:   want{inner: []reconcile.Request{{NamespacedName: types.NamespacedName{Name: "default"}}}},
		},
		"NotDeleting": {
			reason: "A ProviderConfig that is not being deleted is counted as usual.",
			objs:   []client.Object{&v1beta1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "default"}}, policyNaming("team", "edge", v1beta1.ProviderConfigKind, "default")},
			req:    req,
			want:   want{inner: []reconcile.Request{req}},
		},
		"DeletingStillNamed": {
			reason: "A ProviderConfig being deleted stays while a managed resource in its namespace names it, whatever its usages say.",
			objs:   []client.Object{deletingPC("default"), policyNaming("team", "edge", v1beta1.ProviderConfigKind, "default")},
			req:    req,
			want: want{result: reconcile.Result{RequeueAfter: InUseRecheck},
				terminating: "Blocking deletion while usages still exist: 1 managed resources in this namespace name this ProviderConfig"},
		},
		"DeletingNamedByOthersOnly": {
			reason: "Resources naming another config, a ClusterProviderConfig of the same name, or in another namespace do not keep it.",
			objs: []client.Object{deletingPC("default"),
				policyNaming("team", "a", v1beta1.ProviderConfigKind, "other"),
				policyNaming("team", "b", v1beta1.ClusterProviderConfigKind, "default"),
				policyNaming("elsewhere", "c", v1beta1.ProviderConfigKind, "default")},
			req:  req,
			want: want{inner: []reconcile.Request{req}},
		},
		"ListError": {
			reason:  "When the resources cannot be listed the config is not handed on: the error is returned and retried.",
			objs:    []client.Object{deletingPC("default")},
			req:     req,
			listErr: errBoomList,
			want:    want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := runtime.NewScheme()
			if err := v1beta1.SchemeBuilder.AddToScheme(s); err != nil {
				t.Fatal(err)
			}
			b := fake.NewClientBuilder().WithScheme(s).WithObjects(tc.objs...).WithStatusSubresource(&v1beta1.ProviderConfig{})
			if tc.listErr != nil {
				b = b.WithInterceptorFuncs(interceptor.Funcs{List: func(context.Context, client.WithWatch, client.ObjectList, ...client.ListOption) error {
					return tc.listErr
				}})
			}
			inner := &innerCalls{}
			kube := b.Build()
			r := &keepWhileNamed{inner: inner, kube: kube, managed: []schema.GroupVersionKind{policyGVK}}
			got, err := r.Reconcile(context.Background(), tc.req)
			if (err != nil) != tc.want.err {
				t.Fatalf("\n%s\nReconcile(...): error %v, want error %t", tc.reason, err, tc.want.err)
			}
			if diff := cmp.Diff(tc.want.result, got); diff != "" {
				t.Errorf("\n%s\nReconcile(...): -want result, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.inner, inner.got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("\n%s\nReconcile(...): -want inner calls, +got:\n%s", tc.reason, diff)
			}
			pc := &v1beta1.ProviderConfig{}
			terminating := ""
			if kube.Get(context.Background(), tc.req.NamespacedName, pc) == nil {
				terminating = pc.GetCondition(providerconfig.TypeTerminating).Message
			}
			if diff := cmp.Diff(tc.want.terminating, terminating); diff != "" {
				t.Errorf("\n%s\nReconcile(...): -want Terminating message, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

var errBoomList = errors.New("boom")
