package organizationsecuritypolicyassociation

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
)

const parent = "organizations/123"

// fixture is a policy in a fresh emulator, its id, and an OrgPolicyClient
// by id only, as the controller has.
func fixture(t *testing.T) (gcp.OrgPolicyClient, string) {
	t.Helper()
	em := emulator.Start(t, emulator.Options{})
	svc, err := em.NewService(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := gcp.NewClient(svc, nil, nil)
	withParent, err := c.OrgPolicies(parent)
	if err != nil {
		t.Fatal(err)
	}
	id, err := withParent.Create(context.Background(), &compute.SecurityPolicy{ShortName: "baseline", Type: "CLOUD_ARMOR"})
	if err != nil {
		t.Fatal(err)
	}
	byID, err := c.OrgPolicies("")
	if err != nil {
		t.Fatal(err)
	}
	return byID, id
}

func object(id string, mod ...func(*v1alpha1.OrganizationSecurityPolicyAssociation)) *v1alpha1.OrganizationSecurityPolicyAssociation {
	cr := &v1alpha1.OrganizationSecurityPolicyAssociation{ObjectMeta: metav1.ObjectMeta{Name: "whole-org", Namespace: "platform"}}
	cr.Spec.ForProvider = v1alpha1.OrganizationSecurityPolicyAssociationParameters{AttachmentID: parent}
	if id != "" {
		cr.Spec.ForProvider.SecurityPolicy = &id
	}
	for _, m := range mod {
		m(cr)
	}
	return cr
}

func attachedTo(a string) func(*v1alpha1.OrganizationSecurityPolicyAssociation) {
	return func(cr *v1alpha1.OrganizationSecurityPolicyAssociation) { cr.Spec.ForProvider.AttachmentID = a }
}

func excluding(folders ...string) func(*v1alpha1.OrganizationSecurityPolicyAssociation) {
	return func(cr *v1alpha1.OrganizationSecurityPolicyAssociation) {
		cr.Spec.ForProvider.ExcludedFolders = folders
	}
}

func deleting(cr *v1alpha1.OrganizationSecurityPolicyAssociation) {
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
}

func dryRun(cr *v1alpha1.OrganizationSecurityPolicyAssociation) {
	meta.AddAnnotations(cr, map[string]string{v1beta1.AnnotationDryRun: "true"})
}

func TestObserve(t *testing.T) {
	type want struct {
		obs       managed.ExternalObservation
		err       string // a substring of the error
		validated string
	}
	cases := map[string]struct {
		reason   string
		attached string   // an association "whole-org" GCP holds, attached here
		excluded []string // the folders it excludes
		obj      func(id string) *v1alpha1.OrganizationSecurityPolicyAssociation
		want     want
	}{
		"NoPolicyYet": {
			reason: "An unresolved policy reference waits, without an error or a create.",
			obj:    func(string) *v1alpha1.OrganizationSecurityPolicyAssociation { return object("") },
			want:   want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}},
		},
		"PolicyGone": {
			reason: "A policy GCP does not have waits too.",
			obj:    func(string) *v1alpha1.OrganizationSecurityPolicyAssociation { return object("999") },
			want:   want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}},
		},
		"PolicyGoneDeleting": {
			reason: "Being deleted with its policy gone, nothing is left to remove.",
			obj: func(string) *v1alpha1.OrganizationSecurityPolicyAssociation {
				return object("999", deleting)
			},
			want: want{obs: managed.ExternalObservation{}},
		},
		"Missing": {
			reason: "No association of that name: Create.",
			obj:    func(id string) *v1alpha1.OrganizationSecurityPolicyAssociation { return object(id) },
			want:   want{obs: managed.ExternalObservation{}},
		},
		"Present": {
			reason:   "The association attached where the spec says is up to date: nothing in it can change.",
			attached: parent,
			obj:      func(id string) *v1alpha1.OrganizationSecurityPolicyAssociation { return object(id) },
			want:     want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}},
		},
		"SameExclusions": {
			reason:   "An association excluding the folders the spec excludes, in any order, is up to date.",
			attached: parent,
			excluded: []string{"folders/2", "folders/1"},
			obj: func(id string) *v1alpha1.OrganizationSecurityPolicyAssociation {
				return object(id, excluding("folders/1", "folders/2"))
			},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}},
		},
		"OtherExclusions": {
			reason:   "An association of the same name excluding other folders is refused: GCP cannot change it.",
			attached: parent,
			excluded: []string{"folders/9"},
			obj: func(id string) *v1alpha1.OrganizationSecurityPolicyAssociation {
				return object(id, excluding("folders/1"))
			},
			want: want{err: `has an association "whole-org" excluding folders [folders/9] and projects [], not folders [folders/1] and projects [] as the spec says`},
		},
		"Elsewhere": {
			reason:   "An association of the same name attached elsewhere is refused.",
			attached: "folders/9",
			obj:      func(id string) *v1alpha1.OrganizationSecurityPolicyAssociation { return object(id) },
			want:     want{err: `has an association "whole-org" attached to folders/9, not to spec.forProvider.attachmentId organizations/123`},
		},
		"DryRun": {
			reason: "In dry run nothing is added, and GCP cannot be asked.",
			obj: func(id string) *v1alpha1.OrganizationSecurityPolicyAssociation {
				return object(id, dryRun)
			},
			want: want{obs: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, validated: string(v1beta1.ReasonNotAsked)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, id := fixture(t)
			if tc.attached != "" {
				if err := c.AddAssociation(context.Background(), id, &compute.SecurityPolicyAssociation{Name: "whole-org", AttachmentId: tc.attached,
					ExcludedFolders: tc.excluded}, false); err != nil {
					t.Fatal(err)
				}
			}
			cr := tc.obj(id)
			got, err := (&external{policies: c}).Observe(context.Background(), cr)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
			}
			if tc.want.err == "" && gotErr != "" || !strings.Contains(gotErr, tc.want.err) {
				t.Fatalf("\n%s\nObserve(...): want error %q, got %q", tc.reason, tc.want.err, gotErr)
			}
			if diff := cmp.Diff(tc.want.obs, got); diff != "" {
				t.Errorf("\n%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if r := cr.GetCondition(v1beta1.TypeValidated).Reason; string(r) != tc.want.validated {
				t.Errorf("\n%s\nObserve(...): want Validated reason %q, got %q", tc.reason, tc.want.validated, r)
			}
		})
	}
}

// TestLifecycle adds and removes an association against the emulator.
func TestLifecycle(t *testing.T) {
	ctx := context.Background()
	c, id := fixture(t)
	e := &external{policies: c}
	cr := object(id, attachedTo("projects/demo-project"))

	if _, err := e.Create(ctx, cr); err != nil {
		t.Fatalf("Create(...): %v", err)
	}
	if diff := cmp.Diff("whole-org", meta.GetExternalName(cr)); diff != "" {
		t.Errorf("Create(...): external name -want, +got:\n%s", diff)
	}
	obs, err := e.Observe(ctx, cr)
	if err != nil || !obs.ResourceExists || !obs.ResourceUpToDate {
		t.Fatalf("Observe(...) after Create: want exists and up to date, got %+v, %v", obs, err)
	}
	if diff := cmp.Diff(v1alpha1.OrganizationSecurityPolicyAssociationObservation{SecurityPolicyID: id,
		AttachmentID: "projects/demo-project", DisplayName: "baseline"}, cr.Status.AtProvider); diff != "" {
		t.Errorf("status.atProvider: -want, +got:\n%s", diff)
	}
	// One CLOUD_ARMOR association per attachment point: a second is GCP's
	// refusal, never a replacement.
	other := object(id, attachedTo("projects/demo-project"), func(cr *v1alpha1.OrganizationSecurityPolicyAssociation) { cr.SetName("again") })
	if _, err := e.Create(ctx, other); err == nil {
		t.Error("Create(...) at an attachment point already used: want GCP's refusal, got nil")
	}
	if _, err := e.Delete(ctx, cr); err != nil {
		t.Fatalf("Delete(...): %v", err)
	}
	if obs, err := e.Observe(ctx, cr); err != nil || obs.ResourceExists {
		t.Errorf("Observe(...) after Delete: want gone, got %+v, %v", obs, err)
	}
}

// TestExclusions adds an association that carves folders and projects out
// of an organization: GCP holds them, and the status reports them.
func TestExclusions(t *testing.T) {
	ctx := context.Background()
	c, id := fixture(t)
	e := &external{policies: c}
	cr := object(id, excluding("folders/7"), func(cr *v1alpha1.OrganizationSecurityPolicyAssociation) {
		cr.Spec.ForProvider.ExcludedProjects = []string{"projects/sandbox"}
	})
	if _, err := e.Create(ctx, cr); err != nil {
		t.Fatalf("Create(...): %v", err)
	}
	obs, err := e.Observe(ctx, cr)
	if err != nil || !obs.ResourceUpToDate {
		t.Fatalf("Observe(...) after Create: want up to date, got %+v, %v", obs, err)
	}
	want := v1alpha1.OrganizationSecurityPolicyAssociationObservation{SecurityPolicyID: id, AttachmentID: parent, DisplayName: "baseline",
		ExcludedFolders: []string{"folders/7"}, ExcludedProjects: []string{"projects/sandbox"}}
	if diff := cmp.Diff(want, cr.Status.AtProvider); diff != "" {
		t.Errorf("status.atProvider: -want, +got:\n%s", diff)
	}
}
