package emulator

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
)

// Sources of the refusals below; docs/emulator.md lists every case with
// the same source.
const (
	srcInsertParent   = "discovery: organizationSecurityPolicies.insert parentId"
	srcListParent     = "discovery: organizationSecurityPolicies.list parentId"
	srcOrgType        = "discovery: SecurityPolicy.type enum, SecurityPolicy.shortName, organizationSecurityPolicies.insert"
	srcShortName      = "discovery: SecurityPolicy.shortName"
	srcRules          = "discovery: SecurityPolicy.rules; as project policies"
	srcReplace        = "discovery: organizationSecurityPolicies.addAssociation replaceExistingAssociation"
	srcAttachment     = "discovery: SecurityPolicyAssociation.attachmentId; gcloud org-security-policies associations create"
	srcChosen         = "chosen"
	srcBackendPolicy  = "discovery: BackendService.securityPolicy / edgeSecurityPolicy, SecurityPolicy.type"
	srcNoRegionalEdge = "discovery: regionBackendServices has no setEdgeSecurityPolicy"
	srcBucketPolicy   = "discovery: BackendBucket.edgeSecurityPolicy, backendBuckets.setEdgeSecurityPolicy, SecurityPolicy.type"
	srcInUse          = "compute's resourceInUseByAnotherResource"
	srcEdgePolicy     = "discovery: NetworkEdgeSecurityService.securityPolicy; Configure network edge security policies"
	srcEdgeTier       = "Cloud Armor: Configure network edge security policies (Enterprise required)"
	srcFingerprint    = "discovery: NetworkEdgeSecurityService.fingerprint (412 conditionNotMet)"
	srcExists         = "compute's alreadyExists"
	srcNotFound       = "compute's notFound"
)

// TestMoreConformance holds every refusal of organization security
// policies, backend services and network edge security services: the
// request through the official client, GCP's error and its source.
func TestMoreConformance(t *testing.T) {
	const (
		gArmor  = "projects/" + project + "/global/securityPolicies/armor"
		gEdge   = "projects/" + project + "/global/securityPolicies/edge"
		rArmor  = "projects/" + project + "/regions/" + region + "/securityPolicies/armor"
		rNet    = "projects/" + project + "/regions/" + region + "/securityPolicies/net"
		web     = "projects/" + project + "/global/backendServices/web"
		api     = "projects/" + project + "/regions/" + region + "/backendServices/api"
		edgeSvc = "projects/" + project + "/regions/" + region + "/networkEdgeSecurityServices/edge"
		gEdge2  = "projects/" + project + "/global/securityPolicies/edge2"
		static  = "projects/" + project + "/global/backendBuckets/static"
	)
	invalid := func(msg string) *apiErr { return &apiErr{Code: 400, Reason: "invalid", Message: msg} }
	parentMsg := func(param, v string) *apiErr {
		return invalid("Invalid value for field '" + param + "': '" + v + `'. Must be "organizations/[ORGANIZATION_ID]" or "folders/[FOLDER_ID]".`)
	}
	attachMsg := func(field, v string) *apiErr {
		return invalid("Invalid value for field '" + field + "': '" + v +
			`'. Must be "organizations/[ORGANIZATION_ID]", "folders/[FOLDER_ID]" or "projects/[PROJECT]".`)
	}
	inUse := func(resource, user string) *apiErr {
		return &apiErr{Code: 400, Reason: "resourceInUseByAnotherResource",
			Message: "The security_policy resource '" + resource + "' is already being used by '" + user + "'"}
	}

	// fixture is what every case starts from: organization policies corp
	// (organizations/123, associated with folders/456) and spare, project
	// policies of every type, backend services web (using armor and edge)
	// and api, a network edge security service using net. ids holds the
	// organization policies' ids by short name.
	type fixture struct {
		svc *compute.Service
		ids map[string]string
	}
	cases := []struct {
		name   string
		tier   string // the project's tier; Enterprise unless set
		call   func(f fixture) error
		want   *apiErr
		source string
	}{
		// Organization security policies.
		{name: "OrgInsertWithoutParent", source: srcInsertParent, want: parentMsg("parentId", ""),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.Insert(&compute.SecurityPolicy{ShortName: "x"}).Do()
				return err
			}},
		{name: "OrgInsertProjectParent", source: srcInsertParent, want: parentMsg("parentId", "projects/p"),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.Insert(&compute.SecurityPolicy{ShortName: "x"}).ParentId("projects/p").Do()
				return err
			}},
		{name: "OrgListWithoutParent", source: srcListParent, want: parentMsg("parentId", ""),
			call: func(f fixture) error { _, err := f.svc.OrganizationSecurityPolicies.List().Do(); return err }},
		{name: "OrgInsertFirewallType", source: srcOrgType,
			want: invalid("Invalid value for field 'resource.type': 'FIREWALL'. Organization security policies must be of type CLOUD_ARMOR; FIREWALL policies are managed by firewallPolicies."),
			call: func(f fixture) error {
				return orgInsert(f.svc, org, &compute.SecurityPolicy{ShortName: "x", Type: "FIREWALL"})
			}},
		{name: "OrgInsertEdgeType", source: srcOrgType,
			want: invalid("Invalid value for field 'resource.type': 'CLOUD_ARMOR_EDGE'. Organization security policies must be of type CLOUD_ARMOR; FIREWALL policies are managed by firewallPolicies."),
			call: func(f fixture) error {
				return orgInsert(f.svc, org, &compute.SecurityPolicy{ShortName: "x", Type: "CLOUD_ARMOR_EDGE"})
			}},
		{name: "OrgInsertWithoutShortName", source: srcShortName,
			want: invalid("Invalid value for field 'resource.shortName': ''. Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'"),
			call: func(f fixture) error { return orgInsert(f.svc, org, &compute.SecurityPolicy{Description: "x"}) }},
		{name: "OrgInsertShortNameTaken", source: srcShortName,
			want: &apiErr{Code: 409, Reason: "alreadyExists", Message: "The resource 'organizations/123/securityPolicies/corp' already exists"},
			call: func(f fixture) error { return orgInsert(f.svc, org, &compute.SecurityPolicy{ShortName: "corp"}) }},
		{name: "OrgInsertSameShortNameElsewhere", source: srcShortName, want: nil,
			call: func(f fixture) error { return orgInsert(f.svc, folder, &compute.SecurityPolicy{ShortName: "corp"}) }},
		{name: "OrgInsertLabels", source: srcChosen,
			want: invalid("Invalid value for field 'resource.labels': '{  \"a\": \"b\"}'. Organization security policies have no labels."),
			call: func(f fixture) error {
				return orgInsert(f.svc, org, &compute.SecurityPolicy{ShortName: "x", Labels: map[string]string{"a": "b"}})
			}},
		{name: "OrgInsertRulesWithoutDefault", source: srcRules,
			want: invalid("Invalid value for field 'resource.rules': ''. Every security policy must have a default rule at priority 2147483647 with match condition *."),
			call: func(f fixture) error {
				return orgInsert(f.svc, org, &compute.SecurityPolicy{ShortName: "x", Rules: []*compute.SecurityPolicyRule{ipRule(5, "allow", "1.2.3.4")}})
			}},
		{name: "OrgAddRuleDuplicatePriority", source: srcRules,
			want: invalid("Invalid value for field 'resource.priority': '100'. Cannot have rules with the same priorities."),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.AddRule(f.ids["corp"], ipRule(100, "deny(403)", "5.6.7.8")).Do()
				return err
			}},
		{name: "OrgAddRuleUnknownAction", source: srcRules,
			want: invalid("Invalid value for field 'resource.action': 'goto_next'. Must be one of [allow, deny(403), deny(404), deny(429), deny(502), fairshare, rate_based_ban, redirect, throttle]."),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.AddRule(f.ids["corp"], ipRule(7, "goto_next", "5.6.7.8")).Do()
				return err
			}},
		{name: "OrgRemoveDefaultRule", source: srcRules,
			want: invalid("Invalid value for field 'priority': '2147483647'. The default rule cannot be removed."),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.RemoveRule(f.ids["corp"]).Priority(defaultPriority).Do()
				return err
			}},
		{name: "OrgGetRuleMissing", source: srcRules,
			want: invalid("Invalid value for field 'priority': '9'. The security policy does not contain a rule at priority 9."),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.GetRule(f.ids["corp"]).Priority(9).Do()
				return err
			}},
		{name: "OrgPatchShortName", source: srcChosen,
			want: invalid("Invalid value for field 'resource.shortName': 'renamed'. The short name of a security policy cannot be changed."),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.Patch(f.ids["corp"], &compute.SecurityPolicy{ShortName: "renamed"}).Do()
				return err
			}},
		{name: "OrgGetUnknown", source: srcNotFound,
			want: &apiErr{Code: 404, Reason: "notFound", Message: "The resource 'locations/global/securityPolicies/999' was not found"},
			call: func(f fixture) error { _, err := f.svc.OrganizationSecurityPolicies.Get("999").Do(); return err }},
		{name: "OrgSecondAssociationOnAttachment", source: srcReplace,
			want: invalid("Invalid value for field 'resource.attachmentId': 'folders/456'. The attachment point already has an association of a security policy of type CLOUD_ARMOR: 'folder-456' of security policy 'CORP'. Set replaceExistingAssociation to replace it."),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.AddAssociation(f.ids["spare"], &compute.SecurityPolicyAssociation{AttachmentId: folder}).Do()
				return err
			}},
		{name: "OrgSecondAssociationReplaced", source: srcReplace, want: nil,
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.AddAssociation(f.ids["spare"], &compute.SecurityPolicyAssociation{AttachmentId: folder}).
					ReplaceExistingAssociation(true).Do()
				return err
			}},
		{name: "OrgAssociationNameTaken", source: srcChosen,
			want: &apiErr{Code: 409, Reason: "alreadyExists", Message: "The resource 'locations/global/securityPolicies/CORP/associations/folder-456' already exists"},
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.AddAssociation(f.ids["corp"], &compute.SecurityPolicyAssociation{
					Name: "folder-456", AttachmentId: org}).Do()
				return err
			}},
		{name: "OrgAssociationBadAttachment", source: srcAttachment, want: attachMsg("resource.attachmentId", "networks/default"),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.AddAssociation(f.ids["spare"], &compute.SecurityPolicyAssociation{AttachmentId: "networks/default"}).Do()
				return err
			}},
		{name: "OrgListAssociationsBadTarget", source: srcAttachment, want: attachMsg("targetResource", ""),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.ListAssociations().Do()
				return err
			}},
		{name: "OrgRemoveUnknownAssociation", source: srcChosen,
			want: invalid("Invalid value for field 'name': 'nope'. The security policy does not have an association named 'nope'."),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.RemoveAssociation(f.ids["corp"]).Name("nope").Do()
				return err
			}},
		{name: "OrgDeleteAssociated", source: srcChosen,
			want: inUse("locations/global/securityPolicies/CORP", folder),
			call: func(f fixture) error {
				_, err := f.svc.OrganizationSecurityPolicies.Delete(f.ids["corp"]).Do()
				return err
			}},
		{name: "OrgMoveShortNameTaken", source: srcShortName,
			want: &apiErr{Code: 409, Reason: "alreadyExists", Message: "The resource 'folders/456/securityPolicies/corp' already exists"},
			call: func(f fixture) error {
				if err := orgInsert(f.svc, folder, &compute.SecurityPolicy{ShortName: "corp"}); err != nil {
					return err
				}
				_, err := f.svc.OrganizationSecurityPolicies.Move(f.ids["corp"]).ParentId(folder).Do()
				return err
			}},

		// Backend services.
		{name: "BackendEdgePolicyAsSecurityPolicy", source: srcBackendPolicy,
			want: invalid("Invalid value for field 'resource.securityPolicy': 'edge'. The security policy must be of type CLOUD_ARMOR; 'edge' is of type CLOUD_ARMOR_EDGE."),
			call: func(f fixture) error {
				_, err := f.svc.BackendServices.SetSecurityPolicy(project, "web", &compute.SecurityPolicyReference{SecurityPolicy: "edge"}).Do()
				return err
			}},
		{name: "BackendArmorPolicyAsEdgePolicy", source: srcBackendPolicy,
			want: invalid("Invalid value for field 'resource.edgeSecurityPolicy': '" + apiRoot + gArmor + "'. The security policy must be of type CLOUD_ARMOR_EDGE; 'armor' is of type CLOUD_ARMOR."),
			call: func(f fixture) error {
				_, err := f.svc.BackendServices.SetEdgeSecurityPolicy(project, "web", &compute.SecurityPolicyReference{SecurityPolicy: apiRoot + gArmor}).Do()
				return err
			}},
		{name: "BackendMissingPolicy", source: srcNotFound,
			want: &apiErr{Code: 404, Reason: "notFound", Message: "The resource 'projects/" + project + "/global/securityPolicies/nope' was not found"},
			call: func(f fixture) error {
				_, err := f.svc.BackendServices.SetSecurityPolicy(project, "web", &compute.SecurityPolicyReference{SecurityPolicy: "nope"}).Do()
				return err
			}},
		{name: "BackendGlobalWithRegionalPolicy", source: srcBackendPolicy,
			want: invalid("Invalid value for field 'resource.securityPolicy': '" + rArmor + "'. The security policy must be global, like the backend service."),
			call: func(f fixture) error {
				_, err := f.svc.BackendServices.SetSecurityPolicy(project, "web", &compute.SecurityPolicyReference{SecurityPolicy: rArmor}).Do()
				return err
			}},
		{name: "BackendRegionalWithGlobalPolicy", source: srcBackendPolicy,
			want: invalid("Invalid value for field 'resource.securityPolicy': '" + gArmor + "'. The security policy must be in region '" + region + "', like the backend service."),
			call: func(f fixture) error {
				_, err := f.svc.RegionBackendServices.SetSecurityPolicy(project, region, "api", &compute.SecurityPolicyReference{SecurityPolicy: gArmor}).Do()
				return err
			}},
		{name: "BackendRegionalEdgePolicyOnInsert", source: srcNoRegionalEdge,
			want: invalid("Invalid value for field 'resource.edgeSecurityPolicy': 'edge'. Regional backend services have no edge security policy."),
			call: func(f fixture) error {
				_, err := f.svc.RegionBackendServices.Insert(project, region, &compute.BackendService{Name: "x", EdgeSecurityPolicy: "edge"}).Do()
				return err
			}},
		{name: "BackendDuplicate", source: srcExists,
			want: &apiErr{Code: 409, Reason: "alreadyExists", Message: "The resource '" + web + "' already exists"},
			call: func(f fixture) error {
				_, err := f.svc.BackendServices.Insert(project, &compute.BackendService{Name: "web"}).Do()
				return err
			}},
		{name: "BackendMissing", source: srcNotFound,
			want: &apiErr{Code: 404, Reason: "notFound", Message: "The resource 'projects/" + project + "/global/backendServices/nope' was not found"},
			call: func(f fixture) error {
				_, err := f.svc.BackendServices.SetSecurityPolicy(project, "nope", &compute.SecurityPolicyReference{SecurityPolicy: "armor"}).Do()
				return err
			}},
		{name: "DeletePolicyUsedByBackend", source: srcInUse, want: inUse(gArmor, web),
			call: func(f fixture) error { _, err := f.svc.SecurityPolicies.Delete(project, "armor").Do(); return err }},
		{name: "DeleteEdgePolicyUsedByBackend", source: srcInUse, want: inUse(gEdge, web),
			call: func(f fixture) error { _, err := f.svc.SecurityPolicies.Delete(project, "edge").Do(); return err }},
		{name: "DeleteRegionalPolicyUsedByBackend", source: srcInUse, want: inUse(rArmor, api),
			call: func(f fixture) error {
				_, err := f.svc.RegionSecurityPolicies.Delete(project, region, "armor").Do()
				return err
			}},

		// Backend buckets.
		{name: "BucketArmorPolicyAsEdgePolicy", source: srcBucketPolicy,
			want: invalid("Invalid value for field 'resource.edgeSecurityPolicy': 'armor'. The security policy must be of type CLOUD_ARMOR_EDGE; 'armor' is of type CLOUD_ARMOR."),
			call: func(f fixture) error {
				_, err := f.svc.BackendBuckets.SetEdgeSecurityPolicy(project, "static", &compute.SecurityPolicyReference{SecurityPolicy: "armor"}).Do()
				return err
			}},
		{name: "BucketRegionalPolicy", source: srcBucketPolicy,
			want: invalid("Invalid value for field 'resource.edgeSecurityPolicy': '" + rArmor + "'. The security policy must be global, like the backend bucket."),
			call: func(f fixture) error {
				_, err := f.svc.BackendBuckets.SetEdgeSecurityPolicy(project, "static", &compute.SecurityPolicyReference{SecurityPolicy: rArmor}).Do()
				return err
			}},
		{name: "BucketMissingPolicy", source: srcNotFound,
			want: &apiErr{Code: 404, Reason: "notFound", Message: "The resource 'projects/" + project + "/global/securityPolicies/nope' was not found"},
			call: func(f fixture) error {
				_, err := f.svc.BackendBuckets.SetEdgeSecurityPolicy(project, "static", &compute.SecurityPolicyReference{SecurityPolicy: "nope"}).Do()
				return err
			}},
		{name: "BucketMissing", source: srcNotFound,
			want: &apiErr{Code: 404, Reason: "notFound", Message: "The resource 'projects/" + project + "/global/backendBuckets/nope' was not found"},
			call: func(f fixture) error {
				_, err := f.svc.BackendBuckets.SetEdgeSecurityPolicy(project, "nope", &compute.SecurityPolicyReference{SecurityPolicy: "edge"}).Do()
				return err
			}},
		{name: "BucketDuplicate", source: srcExists,
			want: &apiErr{Code: 409, Reason: "alreadyExists", Message: "The resource '" + static + "' already exists"},
			call: func(f fixture) error {
				_, err := f.svc.BackendBuckets.Insert(project, &compute.BackendBucket{Name: "static", BucketName: "b"}).Do()
				return err
			}},
		{name: "DeleteEdgePolicyUsedByBucket", source: srcInUse, want: inUse(gEdge2, static),
			call: func(f fixture) error { _, err := f.svc.SecurityPolicies.Delete(project, "edge2").Do(); return err }},

		// Network edge security services.
		{name: "EdgeServiceArmorPolicy", source: srcEdgePolicy,
			want: invalid("Invalid value for field 'resource.securityPolicy': 'armor'. The security policy must be of type CLOUD_ARMOR_NETWORK; 'armor' is of type CLOUD_ARMOR."),
			call: func(f fixture) error { return edgeInsert(f.svc, region, "armor") }},
		{name: "EdgeServiceGlobalPolicy", source: srcEdgePolicy,
			want: invalid("Invalid value for field 'resource.securityPolicy': '" + gArmor + "'. The security policy must be a regional security policy of project '" + project + "' in region '" + region + "', like the network edge security service."),
			call: func(f fixture) error { return edgeInsert(f.svc, region, gArmor) }},
		{name: "EdgeServiceOtherRegion", source: srcEdgePolicy,
			want: invalid("Invalid value for field 'resource.securityPolicy': '" + rNet + "'. The security policy must be a regional security policy of project '" + project + "' in region 'europe-west1', like the network edge security service."),
			call: func(f fixture) error { return edgeInsert(f.svc, "europe-west1", rNet) }},
		{name: "EdgeServiceMissingPolicy", source: srcEdgePolicy,
			want: invalid("Invalid value for field 'resource.securityPolicy': 'nope'. The resource 'projects/" + project + "/regions/" + region + "/securityPolicies/nope' was not found."),
			call: func(f fixture) error { return edgeInsert(f.svc, region, "nope") }},
		{name: "EdgeServiceStandardTier", source: srcEdgeTier, tier: TierStandard,
			want: invalid("Invalid value for field 'resource.securityPolicy': 'net'. Network edge security policies need Cloud Armor Enterprise; project '" + project + "' is on CA_STANDARD."),
			call: func(f fixture) error { return edgeInsert(f.svc, region, "net") }},
		{name: "EdgeServiceDuplicate", source: srcExists,
			want: &apiErr{Code: 409, Reason: "alreadyExists", Message: "The resource '" + edgeSvc + "' already exists"},
			call: func(f fixture) error {
				_, err := f.svc.NetworkEdgeSecurityServices.Insert(project, region, &compute.NetworkEdgeSecurityService{Name: "edge"}).Do()
				return err
			}},
		{name: "EdgeServiceStaleFingerprint", source: srcFingerprint,
			want: &apiErr{Code: 412, Reason: "conditionNotMet", Message: "Supplied fingerprint does not match current metadata fingerprint."},
			call: func(f fixture) error {
				_, err := f.svc.NetworkEdgeSecurityServices.Patch(project, region, "edge", &compute.NetworkEdgeSecurityService{
					Description: "x", Fingerprint: "AAAAAAAAAAA="}).Do()
				return err
			}},
		{name: "EdgeServiceMaskUnknownField", source: srcChosen,
			want: invalid("Invalid value for field 'updateMask': 'labels'. Only description and securityPolicy can be updated."),
			call: func(f fixture) error {
				_, err := f.svc.NetworkEdgeSecurityServices.Patch(project, region, "edge", &compute.NetworkEdgeSecurityService{}).UpdateMask("labels").Do()
				return err
			}},
		{name: "DeletePolicyUsedByEdgeService", source: srcInUse, want: inUse(rNet, edgeSvc),
			call: func(f fixture) error {
				_, err := f.svc.RegionSecurityPolicies.Delete(project, region, "net").Do()
				return err
			}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			em := Start(t, Options{})
			svc := newService(t, em)
			wait := opWaiter(t, svc)
			_ = em.SetTier(project, TierEnterprisePaygo)
			f := fixture{svc: svc, ids: map[string]string{}}
			f.ids["corp"] = newOrgPolicy(t, svc, org, "corp", ipRule(defaultPriority, "allow", "*"), ipRule(100, "deny(403)", "1.2.3.4"))
			f.ids["spare"] = newOrgPolicy(t, svc, org, "spare")
			wait(svc.OrganizationSecurityPolicies.AddAssociation(f.ids["corp"], &compute.SecurityPolicyAssociation{AttachmentId: folder}).Do())
			armor := newProjectPolicy(t, svc, "", "armor", "CLOUD_ARMOR")
			edge := newProjectPolicy(t, svc, "", "edge", "CLOUD_ARMOR_EDGE")
			rArmor := newProjectPolicy(t, svc, region, "armor", "CLOUD_ARMOR")
			net := newProjectPolicy(t, svc, region, "net", "CLOUD_ARMOR_NETWORK")
			wait(svc.BackendServices.Insert(project, &compute.BackendService{Name: "web", SecurityPolicy: armor, EdgeSecurityPolicy: edge}).Do())
			wait(svc.RegionBackendServices.Insert(project, region, &compute.BackendService{Name: "api", SecurityPolicy: rArmor}).Do())
			wait(svc.NetworkEdgeSecurityServices.Insert(project, region, &compute.NetworkEdgeSecurityService{Name: "edge", SecurityPolicy: net}).Do())
			edge2 := newProjectPolicy(t, svc, "", "edge2", "CLOUD_ARMOR_EDGE")
			wait(svc.BackendBuckets.Insert(project, &compute.BackendBucket{Name: "static", BucketName: "b", EdgeSecurityPolicy: edge2}).Do())
			if tc.tier != "" {
				_ = em.SetTier(project, tc.tier)
			}
			before := em.stateJSON(t)
			want := tc.want
			if want != nil {
				w := *want
				w.Message = strings.ReplaceAll(w.Message, "CORP", f.ids["corp"])
				want = &w
			}
			err := tc.call(f)
			if diff := cmp.Diff(want, asAPIErr(err)); diff != "" {
				t.Errorf("answer (source: %s): -want, +got:\n%s", tc.source, diff)
			}
			if want != nil && tc.name != "OrgMoveShortNameTaken" {
				if after := em.stateJSON(t); after != before {
					t.Errorf("a refused call changed the state")
				}
			}
		})
	}
}

// TestRegionalBackendHasNoEdgePolicy: regionBackendServices has no
// setEdgeSecurityPolicy method, so its URL is not served.
func TestRegionalBackendHasNoEdgePolicy(t *testing.T) {
	em := Start(t, Options{})
	path := "/compute/v1/projects/" + project + "/regions/" + region + "/backendServices/api/setEdgeSecurityPolicy"
	res, body := rawCall(t, "POST", em.URL()+path, `{"securityPolicy":"edge"}`, nil)
	want := `{"error":{"code":404,"message":"The requested URL ` + path + ` was not found on this server.","errors":[{"domain":"global","message":"The requested URL ` + path + ` was not found on this server.","reason":"notFound"}]}}`
	if res.StatusCode != 404 || body != want {
		t.Errorf("regional setEdgeSecurityPolicy: %d %s", res.StatusCode, body)
	}
}

func orgInsert(svc *compute.Service, parent string, p *compute.SecurityPolicy) error {
	_, err := svc.OrganizationSecurityPolicies.Insert(p).ParentId(parent).Do()
	return err
}

func edgeInsert(svc *compute.Service, region, policy string) error {
	_, err := svc.NetworkEdgeSecurityServices.Insert(project, region, &compute.NetworkEdgeSecurityService{Name: "new", SecurityPolicy: policy}).Do()
	return err
}

// stateJSON is every object the emulator holds, as text, to tell whether a
// call changed anything.
func (r *Running) stateJSON(t *testing.T) string {
	t.Helper()
	b, err := json.Marshal([]any{r.Snapshot(), r.OrganizationSecurityPolicies(), r.BackendServices(), r.BackendBuckets(), r.NetworkEdgeSecurityServices()})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestMoreValidateOnly: networkEdgeSecurityServices.insert has
// validateOnly; the other methods of these collections have none and refuse
// it, as the security policy methods without it do, so that a client that
// believes it asked for a dry run never writes.
func TestMoreValidateOnly(t *testing.T) {
	em := Start(t, Options{})
	svc := newService(t, em)
	id := newOrgPolicy(t, svc, org, "corp")
	unknown := `{"error":{"code":400,"message":"Invalid JSON payload received. Unknown name \"validateOnly\": Cannot bind query parameter. Field 'validateOnly' could not be found in request message.","errors":[{"domain":"global","message":"Invalid JSON payload received. Unknown name \"validateOnly\": Cannot bind query parameter. Field 'validateOnly' could not be found in request message.","reason":"invalid"}],"status":"INVALID_ARGUMENT"}}`
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/locations/global/securityPolicies/" + id + "/addRule", `{"priority":5,"action":"allow","match":{"versionedExpr":"SRC_IPS_V1","config":{"srcIpRanges":["1.2.3.4"]}}}`},
		{"POST", "/locations/global/securityPolicies?parentId=" + org, `{"shortName":"x"}`},
		{"POST", "/projects/" + project + "/global/backendServices", `{"name":"web"}`},
		{"POST", "/projects/" + project + "/regions/" + region + "/backendServices", `{"name":"web"}`},
	} {
		sep := "?"
		if strings.Contains(c.path, "?") {
			sep = "&"
		}
		res, body := rawCall(t, c.method, em.URL()+"/compute/v1"+c.path+sep+"validateOnly=true", c.body, nil)
		if res.StatusCode != 400 || body != unknown {
			t.Errorf("%s %s?validateOnly=true: %d %s", c.method, c.path, res.StatusCode, body)
		}
	}
	if len(em.BackendServices()) != 0 || len(em.OrganizationSecurityPolicies()) != 1 {
		t.Error("a refused dry run wrote")
	}

	op, err := svc.NetworkEdgeSecurityServices.Insert(project, region, &compute.NetworkEdgeSecurityService{Name: "edge"}).ValidateOnly(true).Do()
	if err != nil || op.Status != "DONE" || op.OperationType != "insert" {
		t.Fatalf("dry run: %+v, %v", op, err)
	}
	st := em.Stats()
	if len(em.NetworkEdgeSecurityServices()) != 0 || st.DryRuns != 1 || st.Methods["networkEdgeSecurityServices.insert?validateOnly"] != 1 {
		t.Errorf("dry run: services %v, dryRuns %d, methods %v", em.NetworkEdgeSecurityServices(), st.DryRuns, st.Methods)
	}
	_, err = svc.NetworkEdgeSecurityServices.Insert(project, region, &compute.NetworkEdgeSecurityService{Name: "edge", SecurityPolicy: "nope"}).ValidateOnly(true).Do()
	want := &apiErr{Code: 400, Reason: "invalid", Message: "Invalid value for field 'resource.securityPolicy': 'nope'. The resource 'projects/" + project + "/regions/" + region + "/securityPolicies/nope' was not found."}
	if diff := cmp.Diff(want, asAPIErr(err)); diff != "" {
		t.Errorf("refused dry run: -want, +got:\n%s", diff)
	}
}
