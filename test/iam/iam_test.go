// Package iam checks that the GCP permissions docs/install.md asks for are
// exactly those the provider's calls need: the GCP methods are found in the
// code (calls_test.go), each is mapped to its IAM permissions here, and
// every permission must be in the documented role the mapping names, and
// every documented permission needed by some call.
package iam

import (
	"bufio"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/backends"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/securitypolicies"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// The documented roles. Each custom role is a file docs/install.md writes
// as cloudarmor-<role>.yaml; orgRoles are GCP's predefined roles it grants
// on the organization or folder instead.
const (
	base          = "base"          // every project the provider manages policies in
	attach        = "attach"        // SecurityPolicyAttachment
	tier          = "tier"          // ProjectCloudArmorTier that writes the tier
	instances     = "instances"     // AddressSet and IPAllowlist instance and Cloud NAT sources
	addressGroups = "addressgroups" // AddressGroup, IPAllowlist mode addressGroup
	edge          = "edge"          // NetworkEdgeSecurityService
	orgRoles      = "org"           // OrganizationSecurityPolicy{,Rule,Association}
)

// customRoles are the roles docs/install.md defines as files.
var customRoles = []string{base, attach, tier, instances, addressGroups, edge}

// Predefined roles, for the organization policy methods: GCP's own roles
// for hierarchical Cloud Armor policies, granted on the organization or
// folder. Their permissions are not spelt out in the docs (see
// docs/install.md), so the mapping names the roles.
const (
	orgPolicyAdmin   = "roles/compute.orgSecurityPolicyAdmin"
	orgResourceAdmin = "roles/compute.orgSecurityResourceAdmin"
)

// A need is what one GCP method needs, by documented role: each role's
// permissions (or, for orgRoles, predefined roles).
type need map[string][]string

// methodPermissions maps every GCP method the provider calls to the IAM
// permissions it needs, from Google's documentation: a method's permission
// is compute.<collection>.<verb> with insert → create, patch and the rule
// edits → update, aggregatedList → list, operations' wait → get; setting a
// backend's policy (either field) is the collection's setSecurityPolicy plus
// use on the policy it names; address groups (Cloud Armor's "Configure
// address groups") are networksecurity.addressGroups.*, the item edits
// update, listReferences get, and a rule that evaluates a group needs use
// on it. A method missing here fails TestPermissions, so a new call forces
// a decision about its permission and its role.
var methodPermissions = map[string]need{
	// Global policies and their rules.
	"compute.securityPolicies.get":        {base: {"compute.securityPolicies.get"}},
	"compute.securityPolicies.insert":     {base: {"compute.securityPolicies.create"}, addressGroups: {"networksecurity.addressGroups.use"}},
	"compute.securityPolicies.patch":      {base: {"compute.securityPolicies.update"}},
	"compute.securityPolicies.delete":     {base: {"compute.securityPolicies.delete"}},
	"compute.securityPolicies.addRule":    {base: {"compute.securityPolicies.update"}, addressGroups: {"networksecurity.addressGroups.use"}},
	"compute.securityPolicies.patchRule":  {base: {"compute.securityPolicies.update"}, addressGroups: {"networksecurity.addressGroups.use"}},
	"compute.securityPolicies.removeRule": {base: {"compute.securityPolicies.update"}},
	"compute.securityPolicies.setLabels":  {base: {"compute.securityPolicies.setLabels"}},
	"compute.globalOperations.wait":       {base: {"compute.globalOperations.get"}},

	// Regional policies.
	"compute.regionSecurityPolicies.get":        {base: {"compute.regionSecurityPolicies.get"}},
	"compute.regionSecurityPolicies.insert":     {base: {"compute.regionSecurityPolicies.create"}, addressGroups: {"networksecurity.addressGroups.use"}},
	"compute.regionSecurityPolicies.patch":      {base: {"compute.regionSecurityPolicies.update"}},
	"compute.regionSecurityPolicies.delete":     {base: {"compute.regionSecurityPolicies.delete"}},
	"compute.regionSecurityPolicies.addRule":    {base: {"compute.regionSecurityPolicies.update"}, addressGroups: {"networksecurity.addressGroups.use"}},
	"compute.regionSecurityPolicies.patchRule":  {base: {"compute.regionSecurityPolicies.update"}, addressGroups: {"networksecurity.addressGroups.use"}},
	"compute.regionSecurityPolicies.removeRule": {base: {"compute.regionSecurityPolicies.update"}},
	"compute.regionSecurityPolicies.setLabels":  {base: {"compute.regionSecurityPolicies.setLabels"}},
	"compute.regionOperations.wait":             {base: {"compute.regionOperations.get"}},

	// Project-wide reads: the tier (Tier condition) and what uses a policy
	// (usedBy, Attached). Read-only, so in the base role.
	"compute.projects.get":                               {base: {"compute.projects.get"}},
	"compute.backendServices.aggregatedList":             {base: {"compute.backendServices.list"}},
	"compute.networkEdgeSecurityServices.aggregatedList": {base: {"compute.networkEdgeSecurityServices.list"}},
	"compute.backendBuckets.list":                        {base: {"compute.backendBuckets.list"}},

	// ProjectCloudArmorTier.
	"compute.projects.setCloudArmorTier": {tier: {"compute.projects.setCloudArmorTier"}},

	// SecurityPolicyAttachment.
	"compute.backendServices.get":                   {attach: {"compute.backendServices.get"}},
	"compute.backendServices.setSecurityPolicy":     {attach: {"compute.backendServices.setSecurityPolicy", "compute.securityPolicies.use"}},
	"compute.backendServices.setEdgeSecurityPolicy": {attach: {"compute.backendServices.setSecurityPolicy", "compute.securityPolicies.use"}},
	"compute.regionBackendServices.get":             {attach: {"compute.regionBackendServices.get"}},
	"compute.regionBackendServices.setSecurityPolicy": {attach: {"compute.regionBackendServices.setSecurityPolicy",
		"compute.regionSecurityPolicies.use"}},
	"compute.backendBuckets.get":                   {attach: {"compute.backendBuckets.get"}},
	"compute.backendBuckets.setEdgeSecurityPolicy": {attach: {"compute.backendBuckets.setSecurityPolicy", "compute.securityPolicies.use"}},

	// NetworkEdgeSecurityService: it names a regional CLOUD_ARMOR_NETWORK
	// policy, hence use on it, as for a regional backend service.
	"compute.networkEdgeSecurityServices.get":    {edge: {"compute.networkEdgeSecurityServices.get"}},
	"compute.networkEdgeSecurityServices.insert": {edge: {"compute.networkEdgeSecurityServices.create", "compute.regionSecurityPolicies.use"}},
	"compute.networkEdgeSecurityServices.patch":  {edge: {"compute.networkEdgeSecurityServices.update", "compute.regionSecurityPolicies.use"}},
	"compute.networkEdgeSecurityServices.delete": {edge: {"compute.networkEdgeSecurityServices.delete"}},

	// AddressSet's Compute Engine instances.
	"compute.instances.aggregatedList": {instances: {"compute.instances.list"}},
	// AddressSet's Cloud NAT: a router's status is read with get.
	"compute.routers.getRouterStatus": {instances: {"compute.routers.get"}},
	"compute.routers.list":            {instances: {"compute.routers.list"}},

	// AddressGroup (networksecurity v1; organization groups go through the
	// same calls, with an organizations/ name).
	"networksecurity.projects.locations.addressGroups.get":            {addressGroups: {"networksecurity.addressGroups.get"}},
	"networksecurity.projects.locations.addressGroups.create":         {addressGroups: {"networksecurity.addressGroups.create"}},
	"networksecurity.projects.locations.addressGroups.patch":          {addressGroups: {"networksecurity.addressGroups.update"}},
	"networksecurity.projects.locations.addressGroups.delete":         {addressGroups: {"networksecurity.addressGroups.delete"}},
	"networksecurity.projects.locations.addressGroups.addItems":       {addressGroups: {"networksecurity.addressGroups.update"}},
	"networksecurity.projects.locations.addressGroups.removeItems":    {addressGroups: {"networksecurity.addressGroups.update"}},
	"networksecurity.projects.locations.addressGroups.listReferences": {addressGroups: {"networksecurity.addressGroups.get"}},
	"networksecurity.projects.locations.operations.get":               {addressGroups: {"networksecurity.operations.get"}},

	// Organization and folder policies: GCP's predefined roles, on the
	// organization or folder.
	"compute.organizationSecurityPolicies.get":               {orgRoles: {orgPolicyAdmin}},
	"compute.organizationSecurityPolicies.list":              {orgRoles: {orgPolicyAdmin}},
	"compute.organizationSecurityPolicies.insert":            {orgRoles: {orgPolicyAdmin}},
	"compute.organizationSecurityPolicies.patch":             {orgRoles: {orgPolicyAdmin}},
	"compute.organizationSecurityPolicies.delete":            {orgRoles: {orgPolicyAdmin}},
	"compute.organizationSecurityPolicies.addRule":           {orgRoles: {orgPolicyAdmin}},
	"compute.organizationSecurityPolicies.patchRule":         {orgRoles: {orgPolicyAdmin}},
	"compute.organizationSecurityPolicies.removeRule":        {orgRoles: {orgPolicyAdmin}},
	"compute.organizationSecurityPolicies.addAssociation":    {orgRoles: {orgPolicyAdmin, orgResourceAdmin}},
	"compute.organizationSecurityPolicies.removeAssociation": {orgRoles: {orgPolicyAdmin, orgResourceAdmin}},
	"compute.organizationSecurityPolicies.listAssociations":  {orgRoles: {orgPolicyAdmin, orgResourceAdmin}},
	"compute.globalOrganizationOperations.get":               {orgRoles: {orgPolicyAdmin, orgResourceAdmin}},
}

// minMethods is fewer GCP methods than the provider calls (55 when this
// was written): a scan that finds fewer has stopped seeing them.
const minMethods = 45

// installDoc is the runbook that defines the roles.
const installDoc = "docs/install.md"

// TestPermissions: every GCP method the provider calls has an entry in
// methodPermissions, every entry is a method it calls, and every permission
// an entry needs is in the documented role the entry names.
func TestPermissions(t *testing.T) {
	calls := gcpCalls(t)
	t.Logf("%d GCP methods called by %v: %s", len(calls), binaries, strings.Join(sortedKeys(calls), ", "))
	if len(calls) < minMethods {
		t.Fatalf("found %d GCP methods, want at least %d: %v", len(calls), minMethods, sortedKeys(calls))
	}
	for _, m := range []string{"compute.securityPolicies.patchRule", "compute.regionSecurityPolicies.addRule",
		"networksecurity.projects.locations.addressGroups.addItems", "compute.instances.aggregatedList",
		"compute.backendServices.setSecurityPolicy", "compute.organizationSecurityPolicies.addAssociation",
		"compute.projects.setCloudArmorTier", "networksecurity.projects.locations.operations.get"} {
		if _, ok := calls[m]; !ok {
			t.Errorf("the scan did not find %s, which the provider calls: it is blind", m)
		}
	}
	for _, m := range sortedKeys(calls) {
		if _, ok := methodPermissions[m]; !ok {
			t.Errorf("%s (called at %s) has no entry in methodPermissions: add its IAM permissions and their role, and the role in %s",
				m, calls[m].Where, installDoc)
		}
	}
	for _, m := range sortedKeys(methodPermissions) {
		if _, ok := calls[m]; !ok {
			t.Errorf("methodPermissions maps %s, which the provider no longer calls: remove it (and its permissions from %s if nothing else needs them)",
				m, installDoc)
		}
	}

	// The APIs to enable: every API a called method belongs to.
	doc, err := os.ReadFile(repo.Path(installDoc))
	if err != nil {
		t.Fatal(err)
	}
	enable := regexp.MustCompile(`(?m)^gcloud services enable (.*)$`).FindStringSubmatch(string(doc))
	if enable == nil {
		t.Errorf("%s has no `gcloud services enable` line", installDoc)
	}
	apis := map[string]bool{}
	for m := range calls {
		api, _, _ := strings.Cut(m, ".")
		apis[api] = true
	}
	for _, api := range sortedKeys(apis) {
		if enable != nil && !slices.Contains(strings.Fields(enable[1]), api+".googleapis.com") {
			t.Errorf("the provider calls %s.googleapis.com, which %s's `gcloud services enable` does not enable", api, installDoc)
		}
	}

	roles, grants := documentedRoles(t)
	needed := map[string]map[string]bool{} // role → permission → needed
	perms := 0
	for _, m := range sortedKeys(methodPermissions) {
		for role, ps := range methodPermissions[m] {
			for _, p := range ps {
				if needed[role] == nil {
					needed[role] = map[string]bool{}
				}
				needed[role][p] = true
				perms++
				switch {
				case role == orgRoles:
					if !grants[p] {
						t.Errorf("%s needs %s, which %s does not grant (gcloud organizations add-iam-policy-binding ... --role %s)", m, p, installDoc, p)
					}
				case roles[role] == nil:
					t.Errorf("%s needs role %q, which %s does not define (cloudarmor-%s.yaml)", m, role, installDoc, role)
				case !slices.Contains(roles[role], p):
					t.Errorf("%s needs %s, which is not in %s's role %q (cloudarmor-%s.yaml)", m, p, installDoc, role, role)
				}
			}
		}
	}
	for _, role := range customRoles {
		for _, p := range roles[role] {
			if !needed[role][p] {
				t.Errorf("%s's role %q lists %s, which no call the provider makes needs in that role: the list is meant to be exact", installDoc, role, p)
			}
		}
	}
	for role := range roles {
		if !slices.Contains(customRoles, role) {
			t.Errorf("%s defines a role %q that the test does not know (customRoles)", installDoc, role)
		}
	}
	n := 0
	for _, role := range customRoles {
		n += len(roles[role])
	}
	t.Logf("%d (method, permission) pairs; %d permissions in %d custom roles; predefined roles %v",
		perms, n, len(customRoles), sortedKeys(grants))
}

// TestPermissionsMatchEmulator: where the emulator's exported method tables
// give a method's permission (the ones not derived from the verb), the
// mapping needs it too. The emulator refuses a call without its
// permission, so the two agreeing means the suites exercise these names.
func TestPermissionsMatchEmulator(t *testing.T) {
	emulator := map[string]string{}
	for m, p := range backends.Permissions {
		emulator["compute."+m] = p.Name
	}
	for m, p := range securitypolicies.Permissions {
		if !strings.HasPrefix(m, "organizationSecurityPolicies.") { // predefined roles here
			emulator["compute."+m] = p.Name
		}
	}
	for m, p := range networksecurity.Permissions {
		switch {
		case strings.HasPrefix(m, "addressGroups."):
			emulator["networksecurity.projects.locations."+m] = p.Name
		case m == "locationOperations.get":
			emulator["networksecurity.projects.locations.operations.get"] = p.Name
		}
	}
	checked := 0
	for _, m := range sortedKeys(methodPermissions) {
		want, ok := emulator[m]
		if !ok {
			continue
		}
		checked++
		var all []string
		for _, ps := range methodPermissions[m] {
			all = append(all, ps...)
		}
		if !slices.Contains(all, want) {
			t.Errorf("%s: the emulator checks %s, the mapping has %v", m, want, all)
		}
	}
	if checked < 10 {
		t.Errorf("only %d methods compared with the emulator's tables; want at least 10", checked)
	}
	t.Logf("%d methods' permissions agree with the emulator's tables", checked)
}

// A roleFile is a custom role as `gcloud iam roles create --file` reads it.
type roleFile struct {
	Title               string   `json:"title"`
	Description         string   `json:"description"`
	Stage               string   `json:"stage"`
	IncludedPermissions []string `json:"includedPermissions"`
}

var (
	heredoc    = regexp.MustCompile(`^cat > cloudarmor-([a-z]+)\.yaml <<'EOF'$`)
	createRole = regexp.MustCompile(`gcloud iam roles create \S+ .*--file[ =]cloudarmor-([a-z]+)\.yaml`)
	orgGrant   = regexp.MustCompile(`gcloud (organizations|resource-manager folders) add-iam-policy-binding .*--role[ =](roles/\S+)`)
)

// documentedRoles reads docs/install.md's custom roles (each ```sh block's
// here-documents `cat > cloudarmor-<role>.yaml <<'EOF'`, each created with
// `gcloud iam roles create ... --file cloudarmor-<role>.yaml`) and the
// predefined roles it grants on an organization or folder.
func documentedRoles(t *testing.T) (roles map[string][]string, grants map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(repo.Path(installDoc))
	if err != nil {
		t.Fatal(err)
	}
	roles, grants = map[string][]string{}, map[string]bool{}
	created := map[string]bool{}
	var inSh bool
	var role string
	var body strings.Builder
	sc := bufio.NewScanner(strings.NewReader(string(b)))
	var cont string
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case !inSh && trimmed == "```sh":
			inSh = true
			continue
		case inSh && role == "" && trimmed == "```":
			inSh = false
			continue
		case !inSh:
			continue
		}
		if role != "" {
			if trimmed == "EOF" {
				var rf roleFile
				if err := yaml.UnmarshalStrict([]byte(body.String()), &rf); err != nil {
					t.Errorf("%s:%d: cloudarmor-%s.yaml does not parse as a role file: %v", installDoc, n, role, err)
				}
				if rf.Title == "" || rf.Stage == "" || len(rf.IncludedPermissions) == 0 {
					t.Errorf("%s: cloudarmor-%s.yaml needs title, stage and includedPermissions", installDoc, role)
				}
				if _, dup := roles[role]; dup {
					t.Errorf("%s: cloudarmor-%s.yaml is written twice", installDoc, role)
				}
				for i, p := range rf.IncludedPermissions {
					if slices.Contains(rf.IncludedPermissions[:i], p) {
						t.Errorf("%s: cloudarmor-%s.yaml lists %s twice", installDoc, role, p)
					}
				}
				roles[role] = rf.IncludedPermissions
				role = ""
				body.Reset()
				continue
			}
			body.WriteString(line + "\n")
			continue
		}
		if m := heredoc.FindStringSubmatch(trimmed); m != nil {
			role = m[1]
			continue
		}
		// Commands: backslash continuations joined.
		if c, ok := strings.CutSuffix(trimmed, "\\"); ok {
			cont += c + " "
			continue
		}
		cmd := strings.Join(strings.Fields(cont+trimmed), " ")
		cont = ""
		if m := createRole.FindStringSubmatch(cmd); m != nil {
			created[m[1]] = true
		}
		if m := orgGrant.FindStringSubmatch(cmd); m != nil {
			grants[m[2]] = true
		}
	}
	if role != "" {
		t.Errorf("%s: the here-document of cloudarmor-%s.yaml has no EOF", installDoc, role)
	}
	if len(roles) == 0 {
		t.Fatalf("%s defines no role (```sh blocks with cat > cloudarmor-<role>.yaml <<'EOF')", installDoc)
	}
	for role := range roles {
		if !created[role] {
			t.Errorf("%s writes cloudarmor-%s.yaml but no `gcloud iam roles create ... --file cloudarmor-%s.yaml` creates the role", installDoc, role, role)
		}
	}
	return roles, grants
}

// permissionToken is how the docs write a permission: in backticks.
var permissionToken = regexp.MustCompile("`((?:compute|networksecurity)\\.[a-zA-Z]+\\.[a-zA-Z]+)`")

// TestDocsNameOnlyMappedPermissions: a permission the install docs and the
// pages about single kinds mention in backticks is one the mapping gives,
// so no page keeps asking for a permission the provider does not need or
// spells one wrong; and README's Config Connector role is the base role.
func TestDocsNameOnlyMappedPermissions(t *testing.T) {
	all := map[string]bool{}
	for _, n := range methodPermissions {
		for role, ps := range n {
			if role == orgRoles {
				continue
			}
			for _, p := range ps {
				all[p] = true
			}
		}
	}
	for _, doc := range []string{"README.md", installDoc, "docs/attach.md", "docs/tier.md", "docs/security.md", "docs/organization.md"} {
		b, err := os.ReadFile(repo.Path(doc))
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range permissionToken.FindAllStringSubmatch(string(b), -1) {
			if strings.HasSuffix(m[1], ".googleapis.com") {
				continue // an API, not a permission
			}
			if !all[m[1]] {
				t.Errorf("%s names `%s`, which no call the provider makes needs (methodPermissions)", doc, m[1])
			}
		}
	}

	roles, _ := documentedRoles(t)
	readme, err := os.ReadFile(repo.Path("README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var cnrm []string
	for _, block := range fencedBlocks(string(readme), "yaml") {
		var o struct {
			Kind string `json:"kind"`
			Spec struct {
				Permissions []string `json:"permissions"`
			} `json:"spec"`
		}
		if yaml.Unmarshal([]byte(block), &o) == nil && o.Kind == "IAMCustomRole" {
			cnrm = o.Spec.Permissions
		}
	}
	if cnrm != nil {
		if diff := cmp.Diff(roles[base], cnrm); diff != "" {
			t.Errorf("README.md's IAMCustomRole is not %s's base role (-install.md +README):\n%s", installDoc, diff)
		}
	}
}

// fencedBlocks returns the bodies of doc's fenced blocks with info string
// lang.
func fencedBlocks(doc, lang string) []string {
	var out []string
	var cur *strings.Builder
	for _, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```"+lang:
			cur = &strings.Builder{}
		case cur != nil && trimmed == "```":
			out = append(out, cur.String())
			cur = nil
		case cur != nil:
			cur.WriteString(line + "\n")
		}
	}
	return out
}
