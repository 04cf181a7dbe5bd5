// Package grant decides whether a SecurityPolicyAttachment may write its
// target: nothing in GCP ties a backend service or bucket to a namespace,
// and a ClusterProviderConfig's identity can usually write every backend of
// its project, so the platform team grants namespaces backends by name
// (ClusterProviderConfig spec.attachmentGrants). Default deny: a namespace
// no grant selects may write no backend through that config.
//
// A namespaced ProviderConfig needs no grant: it acts with the namespace's
// own credentials, and GCP's IAM decides what those may write.
package grant

import (
	"context"
	"fmt"
	"path"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

// Error strings.
const (
	errNoConfigRef  = "the attachment references no ProviderConfig"
	errGetCPC       = "cannot get ClusterProviderConfig"
	errGetNamespace = "cannot get the attachment's namespace"
	errFmtSelector  = "cannot parse spec.attachmentGrants[%d].namespaceSelector"

	errFmtNotGranted = "ClusterProviderConfig %q grants namespace %q no %s named %q%s: this object makes no call to GCP. " +
		"Nothing in GCP ties a backend to a namespace, so the platform team grants each namespace its backends: ask it to add to the config's " +
		"spec.attachmentGrants an entry whose namespaceSelector matches this namespace and whose targets include {kind: %s, names: [%q]%s}, " +
		"or use a ProviderConfig in this namespace with credentials of its own"
)

// GlobalRegion is the Regions entry that names global backend services.
const GlobalRegion = "global"

// A Target is what a grant is matched against.
type Target struct {
	Kind string
	Name string
	// Region of a regional backend service; "" for a global one.
	Region string
}

// TargetOf is the target of an attachment's parameters.
func TargetOf(p v1alpha1.SecurityPolicyAttachmentParameters) Target {
	return Target{Kind: p.Target.Kind, Name: p.Target.Name, Region: ptr.Deref(p.Target.Region, "")}
}

// Grants reports whether t matches a target of g: same kind, a name pattern
// that matches, and for a BackendService with regions, its region ("global"
// for a global one).
func Grants(g v1beta1.AttachmentGrantTarget, t Target) bool {
	if g.Kind != t.Kind {
		return false
	}
	if len(g.Regions) > 0 {
		region := t.Region
		if region == "" {
			region = GlobalRegion
		}
		if !slices.Contains(g.Regions, region) {
			return false
		}
	}
	return slices.ContainsFunc(g.Names, func(pattern string) bool {
		ok, err := path.Match(pattern, t.Name)
		return err == nil && ok
	})
}

// Granted reports whether the grants give a namespace with labels nsLabels
// the target t.
func Granted(grants []v1beta1.AttachmentGrant, nsLabels map[string]string, t Target) (bool, error) {
	for n, g := range grants {
		sel, err := metav1.LabelSelectorAsSelector(&g.NamespaceSelector)
		if err != nil {
			return false, errors.Wrapf(err, errFmtSelector, n)
		}
		if !sel.Matches(labels.Set(nsLabels)) {
			continue
		}
		if slices.ContainsFunc(g.Targets, func(gt v1beta1.AttachmentGrantTarget) bool { return Grants(gt, t) }) {
			return true, nil
		}
	}
	return false, nil
}

// Refusal is the message of an attachment in namespace whose config cpc
// grants it no t: what it lacks and what to ask for.
func Refusal(cpc, namespace string, t Target) string {
	where, region := "", ""
	if t.Region != "" {
		where = " in region " + t.Region
		region = fmt.Sprintf(", regions: [%q]", t.Region)
	}
	return fmt.Sprintf(errFmtNotGranted, cpc, namespace, t.Kind, t.Name, where, t.Kind, t.Name, region)
}

// A Checker reads the configs and namespaces a decision needs.
type Checker struct {
	kube client.Reader
}

// NewChecker returns a Checker reading through kube, usually the manager's
// cached client.
func NewChecker(kube client.Reader) *Checker { return &Checker{kube: kube} }

// Check says whether cr may write its target: "" if it may, else why not
// and what to grant. An attachment that uses a namespaced ProviderConfig
// may: it acts with its namespace's own credentials.
func (c *Checker) Check(ctx context.Context, cr *v1alpha1.SecurityPolicyAttachment) (string, error) {
	ref := cr.GetProviderConfigReference()
	if ref == nil {
		return "", errors.New(errNoConfigRef)
	}
	if ref.Kind != v1beta1.ClusterProviderConfigKind {
		return "", nil
	}
	cpc := &v1beta1.ClusterProviderConfig{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: ref.Name}, cpc); err != nil {
		return "", errors.Wrap(err, errGetCPC)
	}
	t := TargetOf(cr.Spec.ForProvider)
	if len(cpc.Spec.AttachmentGrants) == 0 {
		return Refusal(cpc.GetName(), cr.GetNamespace(), t), nil
	}
	ns := &corev1.Namespace{}
	if err := c.kube.Get(ctx, types.NamespacedName{Name: cr.GetNamespace()}, ns); err != nil {
		return "", errors.Wrap(err, errGetNamespace)
	}
	ok, err := Granted(cpc.Spec.AttachmentGrants, ns.GetLabels(), t)
	if err != nil || ok {
		return "", err
	}
	return Refusal(cpc.GetName(), cr.GetNamespace(), t), nil
}
