package integration

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestAdmissionOrganizationPolicy checks what admission accepts of the
// organization-level kinds, tenancy first: an organization policy or
// association affects every project below it, so only a
// ClusterProviderConfig may serve one.
func TestAdmissionOrganizationPolicy(t *testing.T) {
	env := startControlPlane(t)
	const (
		refusedPolicy      = "an OrganizationSecurityPolicy affects every project below its organization or folder, so it may only use a ClusterProviderConfig"
		refusedAssociation = "an OrganizationSecurityPolicyAssociation changes what every project below its attachment point enforces, so it may only use a ClusterProviderConfig"
		refusedRule        = "an OrganizationSecurityPolicyRule changes a rule every project below its organization or folder policy enforces, so it may only use a ClusterProviderConfig"
	)
	cases := map[string]struct {
		reason  string
		object  string
		wantErr string // "" means accepted
	}{
		"Policy": {
			reason: "An organization policy with inline rules and the default ClusterProviderConfig is accepted.",
			object: orgPolicyYAML("baseline", "", "parent: organizations/123", "defaultRule: {action: allow}",
				`rules: [{priority: 10, action: "deny(403)", match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["192.0.2.0/24"]}}}]`),
		},
		"PolicyFolder": {
			reason: "A folder parent with an explicit ClusterProviderConfig is accepted.",
			object: orgPolicyYAML("folder-baseline", "providerConfigRef: {kind: ClusterProviderConfig, name: org-admin}", "parent: folders/456"),
		},
		"PolicyProviderConfig": {
			reason:  "A namespaced ProviderConfig is refused, with a message saying why.",
			object:  orgPolicyYAML("tenant-baseline", "providerConfigRef: {kind: ProviderConfig, name: default}", "parent: organizations/123"),
			wantErr: refusedPolicy,
		},
		"PolicyProjectParent": {
			reason:  "A project is not a parent of an organization policy.",
			object:  orgPolicyYAML("project-parent", "", "parent: projects/p"),
			wantErr: "spec.forProvider.parent in body should match",
		},
		"PolicyNoParent": {
			reason:  "The parent is required.",
			object:  orgPolicyYAML("no-parent", "", "description: d"),
			wantErr: "spec.forProvider.parent: Required value",
		},
		"PolicyType": {
			reason:  "A hierarchical Cloud Armor policy is of type CLOUD_ARMOR only.",
			object:  orgPolicyYAML("edge-type", "", "parent: organizations/123", "type: CLOUD_ARMOR_EDGE"),
			wantErr: `spec.forProvider.type: Unsupported value: "CLOUD_ARMOR_EDGE"`,
		},
		"PolicyNameNotShortName": {
			reason:  "metadata.name is the shortName when none is set, so it must be one.",
			object:  orgPolicyYAML("org.baseline", "", "parent: organizations/123"),
			wantErr: "metadata.name is the policy's shortName unless spec.forProvider.shortName is set",
		},
		"PolicyShortName": {
			reason: "With a shortName set, metadata.name may be any object name.",
			object: orgPolicyYAML("org.baseline", "", "parent: organizations/123", "shortName: baseline"),
		},
		"Association": {
			reason: "An association of a referenced policy to the organization is accepted.",
			object: orgAssociationYAML("whole-org", "", "securityPolicyRef: {name: baseline}", "attachmentId: organizations/123"),
		},
		"AssociationProject": {
			reason: "An association to a project, by policy id, is accepted.",
			object: orgAssociationYAML("one-project", "", "securityPolicy: \"1234567890\"", "attachmentId: projects/demo-project"),
		},
		"AssociationProviderConfig": {
			reason:  "A namespaced ProviderConfig is refused, with a message saying why.",
			object:  orgAssociationYAML("tenant-assoc", "providerConfigRef: {kind: ProviderConfig, name: default}", "securityPolicyRef: {name: baseline}", "attachmentId: projects/demo-project"),
			wantErr: refusedAssociation,
		},
		"AssociationNoPolicy": {
			reason:  "An association must say which policy.",
			object:  orgAssociationYAML("no-policy", "", "attachmentId: organizations/123"),
			wantErr: "set securityPolicy, securityPolicyRef or securityPolicySelector",
		},
		"AssociationBadAttachment": {
			reason:  "An attachment point is an organization, a folder or a project.",
			object:  orgAssociationYAML("bad-attachment", "", "securityPolicyRef: {name: baseline}", "attachmentId: regions/us-central1"),
			wantErr: "spec.forProvider.attachmentId in body should match",
		},
		"Rule": {
			reason: "A rule of a referenced organization policy is accepted.",
			object: orgRuleYAML("block-scanners", "", "securityPolicyRef: {name: baseline}", "priority: 100", `action: "deny(403)"`, orgRuleMatch),
		},
		"RuleByID": {
			reason: "A rule of a policy named by id is accepted.",
			object: orgRuleYAML("by-id", "providerConfigRef: {kind: ClusterProviderConfig, name: org-admin}", `securityPolicy: "1234567890"`, "priority: 0", "action: allow", orgRuleMatch),
		},
		"RuleProviderConfig": {
			reason:  "A namespaced ProviderConfig is refused, with a message saying why.",
			object:  orgRuleYAML("tenant-rule", "providerConfigRef: {kind: ProviderConfig, name: default}", "securityPolicyRef: {name: baseline}", "priority: 100", "action: allow", orgRuleMatch),
			wantErr: refusedRule,
		},
		"RuleDefaultPriority": {
			reason:  "The default rule is the policy's (defaultRule), never a rule object's.",
			object:  orgRuleYAML("default-rule", "", "securityPolicyRef: {name: baseline}", "priority: 2147483647", "action: allow", orgRuleMatch),
			wantErr: "spec.forProvider.priority: Invalid value: 2147483647",
		},
		"RuleNoPolicy": {
			reason:  "A rule must say which policy.",
			object:  orgRuleYAML("no-policy", "", "priority: 100", "action: allow", orgRuleMatch),
			wantErr: "one of securityPolicy, securityPolicyRef or securityPolicySelector is required",
		},
		"RuleNoMatch": {
			reason:  "A rule needs a match.",
			object:  orgRuleYAML("no-match", "", "securityPolicyRef: {name: baseline}", "priority: 100", "action: allow"),
			wantErr: "a rule needs match or networkMatch",
		},
		"RuleCrossNamespace": {
			reason:  "The policy is referenced in the rule's own namespace.",
			object:  orgRuleYAML("cross-ns-rule", "", "securityPolicyRef: {name: baseline, namespace: other}", "priority: 100", "action: allow", orgRuleMatch),
			wantErr: "securityPolicyRef must name an OrganizationSecurityPolicy in this rule's namespace",
		},
		"AssociationCrossNamespace": {
			reason:  "The policy is referenced in the association's own namespace.",
			object:  orgAssociationYAML("cross-ns", "", "securityPolicyRef: {name: baseline, namespace: other}", "attachmentId: organizations/123"),
			wantErr: "securityPolicyRef must name an OrganizationSecurityPolicy in this object's namespace",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.object), &u.Object); err != nil {
				t.Fatalf("bad test object: %v", err)
			}
			err := env.kube.Create(context.Background(), u)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("\n%s\nCreate: want accepted, got: %v", tc.reason, err)
			case tc.wantErr != "" && err == nil:
				t.Errorf("\n%s\nCreate: want rejected with %q, got accepted", tc.reason, tc.wantErr)
			case tc.wantErr != "" && !strings.Contains(err.Error(), tc.wantErr):
				t.Errorf("\n%s\nCreate: want error containing\n  %q\ngot\n  %q", tc.reason, tc.wantErr, err.Error())
			}
		})
	}
}

// TestAdmissionOrganizationPolicyDefaults checks that an organization-level
// object without a providerConfigRef gets the ClusterProviderConfig called
// default, and that switching it to a namespaced ProviderConfig later is
// refused too.
func TestAdmissionOrganizationPolicyDefaults(t *testing.T) {
	env := startControlPlane(t)
	ctx := context.Background()
	for name, object := range map[string]string{
		"Policy":      orgPolicyYAML("defaulted", "", "parent: organizations/123"),
		"Association": orgAssociationYAML("defaulted", "", "securityPolicy: \"1\"", "attachmentId: folders/9"),
		"Rule":        orgRuleYAML("defaulted", "", `securityPolicy: "1"`, "priority: 5", "action: allow", orgRuleMatch),
	} {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(object), &u.Object); err != nil {
				t.Fatalf("bad test object: %v", err)
			}
			if err := env.kube.Create(ctx, u); err != nil {
				t.Fatalf("Create: %v", err)
			}
			ref, _, _ := unstructured.NestedStringMap(u.Object, "spec", "providerConfigRef")
			if diff := cmp.Diff(map[string]string{"kind": "ClusterProviderConfig", "name": "default"}, ref); diff != "" {
				t.Errorf("spec.providerConfigRef: -want, +got:\n%s", diff)
			}
			if err := unstructured.SetNestedField(u.Object, "ProviderConfig", "spec", "providerConfigRef", "kind"); err != nil {
				t.Fatal(err)
			}
			if err := env.kube.Update(ctx, u); err == nil || !strings.Contains(err.Error(), "may only use a ClusterProviderConfig") {
				t.Errorf("Update to a ProviderConfig: want refused, got %v", err)
			}
		})
	}
}

// TestAdmissionOrganizationPolicyImmutable checks the fields GCP cannot
// change in place.
func TestAdmissionOrganizationPolicyImmutable(t *testing.T) {
	env := startControlPlane(t)
	ctx := context.Background()
	cases := map[string]struct {
		object  string
		path    []string
		value   any
		wantErr string
	}{
		"Parent": {
			object: orgPolicyYAML("imm-parent", "", "parent: organizations/123"),
			path:   []string{"spec", "forProvider", "parent"}, value: "folders/456",
			wantErr: "parent is immutable",
		},
		"ShortNameAdded": {
			object: orgPolicyYAML("imm-short", "", "parent: organizations/123"),
			path:   []string{"spec", "forProvider", "shortName"}, value: "other",
			wantErr: "shortName is immutable",
		},
		"Attachment": {
			object: orgAssociationYAML("imm-attachment", "", "securityPolicy: \"1\"", "attachmentId: folders/9"),
			path:   []string{"spec", "forProvider", "attachmentId"}, value: "folders/10",
			wantErr: "attachmentId is immutable",
		},
		"SecurityPolicy": {
			object: orgAssociationYAML("imm-policy", "", "securityPolicy: \"1\"", "attachmentId: folders/9"),
			path:   []string{"spec", "forProvider", "securityPolicy"}, value: "2",
			wantErr: "securityPolicy is immutable",
		},
		"RulePriority": {
			object: orgRuleYAML("imm-priority", "", `securityPolicy: "1"`, "priority: 5", "action: allow", orgRuleMatch),
			path:   []string{"spec", "forProvider", "priority"}, value: int64(6),
			wantErr: "priority is immutable",
		},
		"RulePolicyID": {
			object: orgRuleYAML("imm-rule-policy", "", `securityPolicy: "1"`, "priority: 5", "action: allow", orgRuleMatch),
			path:   []string{"spec", "forProvider", "securityPolicy"}, value: "2",
			wantErr: "securityPolicy is immutable",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{}
			if err := yaml.Unmarshal([]byte(tc.object), &u.Object); err != nil {
				t.Fatalf("bad test object: %v", err)
			}
			if err := env.kube.Create(ctx, u); err != nil {
				t.Fatalf("Create: %v", err)
			}
			if err := unstructured.SetNestedField(u.Object, tc.value, tc.path...); err != nil {
				t.Fatal(err)
			}
			err := env.kube.Update(ctx, u)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Update: want error containing %q, got %v", tc.wantErr, err)
			}
		})
	}
}

func orgPolicyYAML(name, spec string, fields ...string) string {
	return orgYAML("OrganizationSecurityPolicy", name, spec, fields...)
}

func orgAssociationYAML(name, spec string, fields ...string) string {
	return orgYAML("OrganizationSecurityPolicyAssociation", name, spec, fields...)
}

func orgRuleYAML(name, spec string, fields ...string) string {
	return orgYAML("OrganizationSecurityPolicyRule", name, spec, fields...)
}

// orgRuleMatch is a rule's match, one forProvider field.
const orgRuleMatch = `match: {versionedExpr: SRC_IPS_V1, config: {srcIpRanges: ["192.0.2.0/24"]}}`

func orgYAML(kind, name, spec string, fields ...string) string {
	s := `apiVersion: cloudarmor.armorplane.io/v1alpha1
kind: ` + kind + `
metadata: {name: "` + name + `", namespace: default}
spec:
`
	if spec != "" {
		s += "  " + spec + "\n"
	}
	s += "  forProvider:\n"
	for _, f := range fields {
		s += "    " + f + "\n"
	}
	return s
}
