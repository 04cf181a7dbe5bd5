package config

import (
	"context"
	"fmt"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/providerconfig"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

// InUseRecheck is how often a namespaced ProviderConfig kept for its
// managed resources is looked at again.
const InUseRecheck = 5 * time.Second

// keepWhileNamed keeps a namespaced ProviderConfig that is being deleted
// while a managed resource in its namespace still names it, then hands it to
// crossplane-runtime's config reconciler. That reconciler lets a config go
// once it counts no ProviderConfigUsage; when the namespace itself is deleted
// its usages go at once, with everything else in it, while its managed
// resources still need the config to delete what they manage in GCP. Without
// this the config went first and the resources could never finish: measured
// on the real node, a deleted tenant namespace stayed Terminating with its
// SecurityPolicies saying `ProviderConfig "default" not found`, and their
// GCP policies were left behind.
type keepWhileNamed struct {
	inner reconcile.Reconciler
	kube  client.Client
	// managed are the managed resource kinds that can name a config.
	managed []schema.GroupVersionKind
}

func (r *keepWhileNamed) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if req.Namespace == "" {
		return r.inner.Reconcile(ctx, req)
	}
	pc := &v1beta1.ProviderConfig{}
	if err := r.kube.Get(ctx, req.NamespacedName, pc); err != nil || pc.GetDeletionTimestamp() == nil {
		return r.inner.Reconcile(ctx, req)
	}
	n, err := r.namedBy(ctx, req.Namespace, req.Name)
	if err != nil {
		return reconcile.Result{}, err
	}
	if n == 0 {
		return r.inner.Reconcile(ctx, req)
	}
	// Said as crossplane-runtime says a config blocked by its usages, so
	// that tools reading the condition (Argo CD's health check) see the
	// same thing.
	pc.SetUsers(int64(n))
	pc.SetConditions(providerconfig.Terminating().WithMessage(fmt.Sprintf(msgFmtNamed, n)))
	if err := r.kube.Status().Update(ctx, pc); err != nil {
		return reconcile.Result{}, errors.Wrap(err, errUpdateStatus)
	}
	return reconcile.Result{RequeueAfter: InUseRecheck}, nil
}

const (
	msgFmtNamed     = "Blocking deletion while usages still exist: %d managed resources in this namespace name this ProviderConfig"
	errUpdateStatus = "cannot update the ProviderConfig's status"
)

// namedBy counts the managed resources in namespace whose providerConfigRef
// is the ProviderConfig name. A kind whose CRD is not installed has none.
func (r *keepWhileNamed) namedBy(ctx context.Context, namespace, name string) (int, error) {
	n := 0
	for _, gvk := range r.managed {
		l := &unstructured.UnstructuredList{}
		l.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
		if err := r.kube.List(ctx, l, client.InNamespace(namespace)); err != nil {
			if meta.IsNoMatchError(err) {
				continue
			}
			return 0, errors.Wrapf(err, "cannot list %s in %s", gvk.Kind, namespace)
		}
		for _, o := range l.Items {
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "providerConfigRef", "kind")
			ref, _, _ := unstructured.NestedString(o.Object, "spec", "providerConfigRef", "name")
			if kind == v1beta1.ProviderConfigKind && ref == name {
				n++
			}
		}
	}
	return n, nil
}
