package gitops

import (
	"context"
	"os"
	"testing"
	"time"

	compute "google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
)

// footprint is what the suite adds to the shared node, so that its cleanup
// removes exactly that: the namespaces and CRDs it created, not ones that
// were there before.
type footprint struct {
	plat       *platform.Platform
	gcp        *compute.Service
	namespaces []string
	crds       []string
}

// createNamespace creates a namespace the suite owns; one that exists already
// belongs to someone else on the shared node, and the suite stops.
func (f *footprint) createNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := f.plat.Kube.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace %s on the shared node: %v", name, err)
	}
	f.namespaces = append(f.namespaces, name)
}

// installCRDs installs the CRDs in files, remembering those the node did not
// have.
func (f *footprint) installCRDs(t *testing.T, files ...string) {
	t.Helper()
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil || crd.Name == "" {
			t.Fatalf("%s: not a CRD (%v)", file, err)
		}
		err = f.plat.Kube.Client.Get(context.Background(), client.ObjectKey{Name: crd.Name}, &apiextensionsv1.CustomResourceDefinition{})
		switch {
		case kerrors.IsNotFound(err):
			f.crds = append(f.crds, crd.Name)
		case err != nil:
			t.Fatal(err)
		default:
			t.Logf("CRD %s is on the node already: kept after the suite", crd.Name)
		}
	}
	if _, err := f.plat.Kube.InstallCRDs(files...); err != nil {
		t.Fatal(err)
	}
}

// cleanup leaves the node as the suite found it. It runs once Argo CD has
// stopped, so nothing syncs back what it deletes, and while the emulator
// still answers the provider's deletes. Deleting the namespaces takes the
// Application and AppProject (argocd) and what the Application synced
// (gitops) with them; the provider deletes the rules and the policy from
// GCP before crossplane-runtime lets their objects go, so once the
// namespaces are gone GCP must be empty.
func (f *footprint) cleanup(t *testing.T) {
	if forced := f.plat.DeleteNamespaces(t, f.namespaces...); len(forced) > 0 {
		t.Errorf("deleting the suite's namespaces left objects the provider could not delete: %v", forced)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, name := range f.crds {
		crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if err := f.plat.Kube.Client.Delete(ctx, crd); err != nil && !kerrors.IsNotFound(err) {
			t.Errorf("cleanup: delete CRD %s: %v", name, err)
		}
	}
	for _, name := range f.crds {
		for {
			err := f.plat.Kube.Client.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{})
			if kerrors.IsNotFound(err) {
				break
			}
			if ctx.Err() != nil {
				t.Errorf("cleanup: CRD %s still there after a minute", name)
				break
			}
			time.Sleep(250 * time.Millisecond)
		}
	}
	// Nothing may be left in GCP: a policy left would mean the provider never
	// finished a delete.
	if l, err := f.gcp.SecurityPolicies.List(project).Do(); err != nil {
		t.Errorf("cleanup: list GCP policies: %v", err)
	} else if len(l.Items) > 0 {
		names := make([]string, 0, len(l.Items))
		for _, p := range l.Items {
			names = append(names, p.Name)
		}
		t.Errorf("cleanup: GCP still has policies %v after the namespace was deleted", names)
	}
}
