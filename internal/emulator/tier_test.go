package emulator

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
)

func TestProjectTier(t *testing.T) {
	cases := map[string]struct {
		opts Options
		set  string // through setCloudArmorTier, if not ""
		want string
	}{
		"GCPDefault":      {want: TierStandard},
		"DefaultOption":   {opts: Options{DefaultTier: TierEnterpriseAnnual}, want: TierEnterpriseAnnual},
		"SetEnterprise":   {set: TierEnterprisePaygo, want: TierEnterprisePaygo},
		"SetBackStandard": {opts: Options{DefaultTier: TierEnterprisePaygo}, set: TierStandard, want: TierStandard},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			em := Start(t, tc.opts)
			svc := newService(t, em)
			before, err := svc.Projects.Get(project).Do()
			if err != nil {
				t.Fatal(err)
			}
			if tc.set != "" {
				op, err := svc.Projects.SetCloudArmorTier(project, &compute.ProjectsSetCloudArmorTierRequest{CloudArmorTier: tc.set}).Do()
				if err != nil {
					t.Fatal(err)
				}
				if op.OperationType != "setCloudArmorTier" || op.TargetLink != apiRoot+"projects/"+project || op.TargetId != before.Id {
					t.Errorf("operation: type %q, target %q %d", op.OperationType, op.TargetLink, op.TargetId)
				}
				done(t, globalAPI{svc}, op, nil)
			}
			got, err := svc.Projects.Get(project).Do()
			if err != nil {
				t.Fatal(err)
			}
			want := &compute.Project{Kind: "compute#project", Name: project, Id: before.Id, CloudArmorTier: tc.want,
				SelfLink: apiRoot + "projects/" + project, CreationTimestamp: before.CreationTimestamp}
			if diff := cmp.Diff(want, got, cmp.FilterPath(isServerResponse, cmp.Ignore())); diff != "" {
				t.Errorf("projects.get: -want, +got:\n%s", diff)
			}
		})
	}
}

func TestSetCloudArmorTierRefused(t *testing.T) {
	em := Start(t, Options{})
	_, err := newService(t, em).Projects.SetCloudArmorTier(project, &compute.ProjectsSetCloudArmorTierRequest{CloudArmorTier: "CA_GOLD"}).Do()
	want := &apiErr{Code: 400, Reason: "invalid", Message: "Invalid value for field 'resource.cloudArmorTier': 'CA_GOLD'. Must be one of [CA_ENTERPRISE_ANNUAL, CA_ENTERPRISE_PAYGO, CA_STANDARD]."}
	if diff := cmp.Diff(want, asAPIErr(err)); diff != "" {
		t.Errorf("setCloudArmorTier: -want, +got:\n%s", diff)
	}
	if err := em.SetTier(project, "CA_GOLD"); err == nil {
		t.Error("SetTier accepted CA_GOLD")
	}
	if _, err := New(Options{DefaultTier: "CA_GOLD"}); err == nil {
		t.Error("New accepted DefaultTier CA_GOLD")
	}
}

// TestAddressGroupRulesNeedEnterprise: every write that stores a rule
// refuses evaluateAddressGroup and evaluateOrganizationAddressGroup in a
// CA_STANDARD project, and accepts them on either Enterprise tier.
func TestAddressGroupRulesNeedEnterprise(t *testing.T) {
	refused := func(field, expr string) *apiErr {
		return &apiErr{Code: 400, Reason: "invalid", Message: "Invalid value for field '" + field + "': '" + expr +
			"'. Address groups (evaluateAddressGroup, evaluateOrganizationAddressGroup) need Cloud Armor Enterprise; project '" + project + "' is on CA_STANDARD."}
	}
	writes := map[string]struct {
		field string
		write func(api policyAPI, expr string) (*compute.Operation, error)
	}{
		"Insert": {field: "resource.rules[1].match.expr.expression", write: func(api policyAPI, e string) (*compute.Operation, error) {
			return api.Insert(policyWith("new", vRule(10, "deny(403)", vExpr(e))))
		}},
		"AddRule": {field: "resource.match.expr.expression", write: func(api policyAPI, e string) (*compute.Operation, error) {
			return api.AddRule("p", vRule(10, "deny(403)", vExpr(e)))
		}},
		"PatchRule": {field: "resource.match.expr.expression", write: func(api policyAPI, e string) (*compute.Operation, error) {
			return api.PatchRule("p", 20, "", vRule(20, "deny(403)", vExpr(e)))
		}},
		"Patch": {field: "resource.rules[1].match.expr.expression", write: func(api policyAPI, e string) (*compute.Operation, error) {
			return api.Patch("p", policyWith("p", vRule(10, "deny(403)", vExpr(e))))
		}},
	}
	exprs := map[string]string{"ProjectGroup": "evaluateAddressGroup('g', origin.ip)",
		"OrganizationGroup": "evaluateOrganizationAddressGroup('og', origin.user_ip)"}
	for _, tier := range []string{TierStandard, TierEnterprisePaygo, TierEnterpriseAnnual} {
		for name, w := range writes {
			for group, e := range exprs {
				t.Run(tier+"/"+name+"/"+group, func(t *testing.T) {
					scopes(t, Options{}, func(t *testing.T, em *Running, api policyAPI) {
						if err := em.SetTier(project, tier); err != nil {
							t.Fatal(err)
						}
						waiter(t, api)(api.Insert(policyWith("p", vRule(20, "deny(403)", vExpr("origin.region_code == 'XX'")))))
						_, err := w.write(api, e)
						var want *apiErr
						if tier == TierStandard {
							want = refused(w.field, e)
						}
						if diff := cmp.Diff(want, asAPIErr(err)); diff != "" {
							t.Errorf("%s: -want, +got:\n%s", e, diff)
						}
					})
				})
			}
		}
	}
}

// TestNamedIPListsNeedEnterprise: a global policy's rule may use a named IP
// address list (evaluatePreconfiguredExpr('sourceiplist-…')) only in a
// project on an Enterprise tier; the tier is read at the write.
func TestNamedIPListsNeedEnterprise(t *testing.T) {
	const expr = "evaluatePreconfiguredExpr('sourceiplist-fastly')"
	cases := map[string]struct {
		tier string
		want *apiErr
	}{
		"Standard": {tier: TierStandard, want: &apiErr{Code: 400, Reason: "invalid", Message: "Invalid value for field 'resource.match.expr.expression': '" + expr +
			"'. Named IP address lists (evaluatePreconfiguredExpr('sourceiplist-*')) need Cloud Armor Enterprise; project '" + project + "' is on CA_STANDARD."}},
		"EnterprisePaygo":  {tier: TierEnterprisePaygo},
		"EnterpriseAnnual": {tier: TierEnterpriseAnnual},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			em := Start(t, Options{})
			if err := em.SetTier(project, tc.tier); err != nil {
				t.Fatal(err)
			}
			api := globalAPI{newService(t, em)}
			waiter(t, api)(api.Insert(policyWith("p")))
			_, err := api.AddRule("p", vRule(10, "allow", vExpr(expr)))
			if diff := cmp.Diff(tc.want, asAPIErr(err)); diff != "" {
				t.Errorf("addRule with a named IP list: -want, +got:\n%s", diff)
			}
		})
	}
}

// TestSetTierAllowsExistingRules: the tier is read at each write, so a rule
// refused in a standard project is accepted once the project is Enterprise.
func TestSetTierAllowsExistingRules(t *testing.T) {
	em := Start(t, Options{})
	api := globalAPI{newService(t, em)}
	waiter(t, api)(api.Insert(policyWith("p")))
	rule := vRule(10, "deny(403)", vExpr("evaluateAddressGroup('g', origin.ip)"))
	if _, err := api.AddRule("p", rule); err == nil {
		t.Fatal("addRule accepted an address group in a CA_STANDARD project")
	}
	if err := em.SetTier(project, TierEnterprisePaygo); err != nil {
		t.Fatal(err)
	}
	waiter(t, api)(api.AddRule("p", rule))
	if diff := cmp.Diff(map[string]string{project: TierEnterprisePaygo}, em.Tiers()); diff != "" {
		t.Errorf("Tiers: -want, +got:\n%s", diff)
	}
}
