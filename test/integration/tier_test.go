package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	apisv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/apivalues"
	spcontroller "github.com/armorplane/provider-cloudarmor/internal/controller/securitypolicy"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
)

// testTierAndUsers drives what a user of an Enterprise feature and of an
// unattached policy sees: a policy with a named IP list in a Standard
// project is refused by GCP and says why (Tier=False); a
// ProjectCloudArmorTier is refused until the ClusterProviderConfig opens
// project settings to its namespace, then sets the tier with one write; the
// policy then says the tier suffices, is created, says that nothing uses it
// (Attached=False), and lists the backend service that starts using it.
func (e *env) testTierAndUsers(t *testing.T) {
	ctx := context.Background()
	start, startStats := time.Now(), e.emu.Stats().Methods
	defer func() {
		// What the project-wide reads cost, next to the policies' own reads
		// (docs/performance.md, "Project-wide reads").
		st := e.emu.Stats().Methods
		d := func(m string) int64 { return st[m] - startStats[m] }
		t.Logf("over %s (--poll %s): backendServices.aggregatedList %d, projects.get %d, securityPolicies.get %d",
			time.Since(start).Round(time.Second), poll, d("backendServices.aggregatedList"), d("projects.get"), d("securityPolicies.get"))
	}()
	sp := armor.NewPolicy("partners", func(p *v1beta1.SecurityPolicyParameters) {
		p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
		p.Rules = []v1beta1.PolicyRule{{Priority: 1000, RuleParameters: v1beta1.RuleParameters{Action: "allow",
			Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: "evaluatePreconfiguredExpr('sourceiplist-fastly')"}}}}}
	})
	if err := e.kube.Create(ctx, sp); err != nil {
		t.Fatal(err)
	}
	// GCP refuses the named list in a Standard project; the Tier condition
	// says why beside GCP's error.
	e.waitCondition(t, sp, xpv2.TypeSynced, corev1.ConditionFalse, "Named IP address lists (evaluatePreconfiguredExpr('sourceiplist-*')) need Cloud Armor Enterprise; project '"+project+"' is on CA_STANDARD")
	e.waitCondition(t, sp, apivalues.TypeTier, corev1.ConditionFalse, "Project "+project+" is on CA_STANDARD")

	tier := &v1alpha1.ProjectCloudArmorTier{ObjectMeta: metav1.ObjectMeta{Namespace: armor.Namespace, Name: "enterprise"},
		Spec: v1alpha1.ProjectCloudArmorTierSpec{ForProvider: v1alpha1.ProjectCloudArmorTierParameters{CloudArmorTier: v1alpha1.TierEnterprisePaygo}}}
	if err := e.kube.Create(ctx, tier); err != nil {
		t.Fatal(err)
	}
	e.waitCondition(t, tier, xpv2.TypeSynced, corev1.ConditionFalse, "does not let namespace \""+armor.Namespace+"\" change project-wide settings")
	if got := e.emu.Tiers()[project]; got == v1alpha1.TierEnterprisePaygo {
		t.Fatalf("the tier was set through a ClusterProviderConfig that does not open project settings to the namespace")
	}

	cpc := &apisv1beta1.ClusterProviderConfig{}
	if err := e.kube.Get(ctx, client.ObjectKey{Name: "default"}, cpc); err != nil {
		t.Fatal(err)
	}
	cpc.Spec.ProjectSettingsNamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": armor.Namespace}}
	if err := e.kube.Update(ctx, cpc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := e.kube.Get(ctx, client.ObjectKey{Name: "default"}, cpc); err == nil {
			cpc.Spec.ProjectSettingsNamespaceSelector = nil
			_ = e.kube.Update(ctx, cpc)
		}
	})
	before := e.emu.Stats().Methods["projects.setCloudArmorTier"]
	e.waitReady(t, tier)
	// What the object reports is what it read: the new tier from the poll
	// after the write.
	eventually(t, waitFor, "status.atProvider.cloudArmorTier to be "+v1alpha1.TierEnterprisePaygo, func() error {
		if err := e.kube.Get(ctx, client.ObjectKeyFromObject(tier), tier); err != nil {
			return err
		}
		if got := tier.Status.AtProvider.CloudArmorTier; got != v1alpha1.TierEnterprisePaygo {
			return fmt.Errorf("got %q", got)
		}
		return nil
	})
	if got := e.emu.Tiers()[project]; got != v1alpha1.TierEnterprisePaygo {
		t.Errorf("the emulator's tier of %s: want %s, got %s", project, v1alpha1.TierEnterprisePaygo, got)
	}
	if n := e.emu.Stats().Methods["projects.setCloudArmorTier"] - before; n != 1 {
		t.Errorf("projects.setCloudArmorTier calls for one change: want 1, got %d", n)
	}
	e.waitCondition(t, sp, apivalues.TypeTier, corev1.ConditionTrue, "is on CA_ENTERPRISE_PAYGO")
	// The create the Standard tier refused is retried, and succeeds.
	e.waitReady(t, sp)
	e.waitCondition(t, sp, spcontroller.TypeAttached, corev1.ConditionFalse, "No backend service uses this policy")

	// A backend service starts using the policy, behind the provider's back.
	e.do(t, "")(e.gcp.BackendServices.Insert(project, &compute.BackendService{Name: "web"}).Do())
	e.do(t, "")(e.gcp.BackendServices.SetSecurityPolicy(project, "web", &compute.SecurityPolicyReference{SecurityPolicy: "partners"}).Do())
	e.waitCondition(t, sp, spcontroller.TypeAttached, corev1.ConditionTrue, "projects/"+project+"/global/backendServices/web (securityPolicy)")
	want := []v1beta1.PolicyUserObservation{{Name: "projects/" + project + "/global/backendServices/web", Field: "securityPolicy"}}
	if got := sp.Status.AtProvider.UsedBy; len(got) != 1 || got[0] != want[0] {
		t.Errorf("status.atProvider.usedBy: want %v, got %v", want, got)
	}
	e.do(t, "")(e.gcp.BackendServices.SetSecurityPolicy(project, "web", &compute.SecurityPolicyReference{}).Do())

	// Deleting the tier object leaves the project on its tier.
	if err := e.kube.Delete(ctx, tier); err != nil {
		t.Fatal(err)
	}
	eventually(t, waitFor, "the tier object to be deleted", func() error {
		if err := e.kube.Get(ctx, client.ObjectKeyFromObject(tier), tier); !kerrors.IsNotFound(err) {
			return fmt.Errorf("object still exists (err %v)", err)
		}
		return nil
	})
	if got := e.emu.Tiers()[project]; got != v1alpha1.TierEnterprisePaygo {
		t.Errorf("after deleting the tier object, the tier of %s: want %s kept, got %s", project, v1alpha1.TierEnterprisePaygo, got)
	}
	if err := e.kube.Delete(ctx, sp); err != nil {
		t.Fatal(err)
	}
}

// waitCondition waits until o's condition ct has status and a message
// containing msg.
func (e *env) waitCondition(t *testing.T, o client.Object, ct xpv2.ConditionType, status corev1.ConditionStatus, msg string) {
	t.Helper()
	c, ok := o.(interface {
		GetCondition(xpv2.ConditionType) xpv2.Condition
	})
	if !ok {
		t.Fatalf("%T has no conditions", o)
	}
	eventually(t, waitFor, fmt.Sprintf("%s to be %s=%s", o.GetName(), ct, status), func() error {
		if err := e.kube.Get(context.Background(), client.ObjectKeyFromObject(o), o); err != nil {
			return err
		}
		if got := c.GetCondition(ct); got.Status != status || !strings.Contains(got.Message, msg) {
			return fmt.Errorf("%s=%s %s: %s", ct, got.Status, got.Reason, got.Message)
		}
		return nil
	})
}

// do waits for the operation a direct call to the emulator started.
func (e *env) do(t *testing.T, region string) func(*compute.Operation, error) {
	t.Helper()
	return func(op *compute.Operation, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, waitFor, "operation "+op.Name, func() error {
			var got *compute.Operation
			var err error
			if region == "" {
				got, err = e.gcp.GlobalOperations.Get(project, op.Name).Do()
			} else {
				got, err = e.gcp.RegionOperations.Get(project, region, op.Name).Do()
			}
			if err != nil {
				return err
			}
			if got.Status != "DONE" {
				return fmt.Errorf("operation %s is %s", op.Name, got.Status)
			}
			return nil
		})
	}
}

// testProjectReads measures what the project-wide reads add to a steady
// state: ten policies of one project, polled every poll interval, share one
// backendServices.aggregatedList per interval, and a spec without
// Enterprise features reads no tier.
func (e *env) testProjectReads(t *testing.T) {
	ctx := context.Background()
	const policies = 10
	var sps []*v1beta1.SecurityPolicy
	for i := range policies {
		sp := armor.NewPolicy(fmt.Sprintf("steady-%d", i), func(p *v1beta1.SecurityPolicyParameters) {
			p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
		})
		if err := e.kube.Create(ctx, sp); err != nil {
			t.Fatal(err)
		}
		sps = append(sps, sp)
	}
	for _, sp := range sps {
		e.waitReady(t, sp)
		e.waitCondition(t, sp, spcontroller.TypeAttached, corev1.ConditionFalse, "No backend service uses this policy")
	}
	// Let the polls fall into their windows, then watch whole intervals.
	time.Sleep(2 * poll)
	const intervals = 5
	before := e.emu.Stats().Methods
	time.Sleep(intervals * poll)
	after := e.emu.Stats().Methods
	d := func(m string) float64 { return float64(after[m]-before[m]) / intervals }
	lists, gets, tiers := d("backendServices.aggregatedList"), d("securityPolicies.get"), d("projects.get")
	t.Logf("per poll interval (%s), %d policies of one project: backendServices.aggregatedList %.1f, securityPolicies.get %.1f, projects.get %.1f",
		poll, policies, lists, gets, tiers)
	if lists > 1.5 {
		t.Errorf("backendServices.aggregatedList per poll interval: want about 1 for the project, got %.1f", lists)
	}
	if tiers != 0 {
		t.Errorf("projects.get per poll interval without Enterprise features: want 0, got %.1f", tiers)
	}
	for _, sp := range sps {
		if err := e.kube.Delete(ctx, sp); err != nil {
			t.Fatal(err)
		}
	}
}
