package apivalues

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/cel-go/cel"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// These tests load the
// generated CRDs from package/crds and judge values the way admission does
// for a single field: enum, pattern, maxLength and the field's own CEL rules
// (those that do not compare with oldSelf).

// crds are the CRDs the provider installs, by plural name.
func crds(t *testing.T) map[string]*apiextensionsv1.CustomResourceDefinition {
	t.Helper()
	files, err := filepath.Glob(filepath.Join("..", "..", "..", "package", "crds", "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no CRDs in package/crds (%v): run make generate", err)
	}
	out := map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		d := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
		for {
			c := &apiextensionsv1.CustomResourceDefinition{}
			if err := d.Decode(c); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			out[c.Spec.Names.Plural] = c
		}
	}
	return out
}

// schemaAt returns the schema of the field at path (dot-separated, "[]" for
// list items) in the first served version of c, and whether it exists.
func schemaAt(c *apiextensionsv1.CustomResourceDefinition, path string) (apiextensionsv1.JSONSchemaProps, bool) {
	s := *c.Spec.Versions[0].Schema.OpenAPIV3Schema
	for _, part := range strings.Split(path, ".") {
		items := strings.HasSuffix(part, "[]")
		p, ok := s.Properties[strings.TrimSuffix(part, "[]")]
		if !ok {
			return s, false
		}
		s = p
		if items {
			if s.Items == nil || s.Items.Schema == nil {
				return s, false
			}
			s = *s.Items.Schema
		}
	}
	return s, true
}

// refusal says why admission refuses v for a field of schema s; "" when it
// accepts it.
func refusal(t *testing.T, s apiextensionsv1.JSONSchemaProps, v any) string {
	t.Helper()
	if str, ok := v.(string); ok {
		if len(s.Enum) > 0 && !slices.ContainsFunc(s.Enum, func(e apiextensionsv1.JSON) bool { return string(e.Raw) == quote(str) }) {
			return fmt.Sprintf("not in the enum %s", enumOf(s))
		}
		if s.Pattern != "" && !regexp.MustCompile(s.Pattern).MatchString(str) {
			return fmt.Sprintf("does not match the pattern %s", s.Pattern)
		}
		if s.MaxLength != nil && int64(len(str)) > *s.MaxLength {
			return fmt.Sprintf("longer than %d", *s.MaxLength)
		}
	}
	for _, r := range s.XValidations {
		if strings.Contains(r.Rule, "oldSelf") {
			continue // transition rules judge updates, not values
		}
		if !evalRule(t, r.Rule, v) {
			return r.Message
		}
	}
	return ""
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func enumOf(s apiextensionsv1.JSONSchemaProps) string {
	vs := make([]string, 0, len(s.Enum))
	for _, e := range s.Enum {
		vs = append(vs, string(e.Raw))
	}
	return "[" + strings.Join(vs, " ") + "]"
}

// evalRule evaluates a CEL validation rule with self bound to v.
func evalRule(t *testing.T, rule string, v any) bool {
	t.Helper()
	env, err := cel.NewEnv(cel.Variable("self", cel.DynType))
	if err != nil {
		t.Fatal(err)
	}
	ast, iss := env.Compile(rule)
	if iss.Err() != nil {
		t.Fatalf("rule %q: %v", rule, iss.Err())
	}
	prg, err := env.Program(ast)
	if err != nil {
		t.Fatalf("rule %q: %v", rule, err)
	}
	out, _, err := prg.Eval(map[string]any{"self": v})
	if err != nil {
		t.Fatalf("rule %q on %v: %v", rule, v, err)
	}
	ok, isBool := out.Value().(bool)
	if !isBool {
		t.Fatalf("rule %q on %v: %v is not a bool", rule, v, out)
	}
	return ok
}

// discovery is a Google API discovery document, as much as these tests read.
type discovery struct {
	Revision string                `json:"revision"`
	Schemas  map[string]discSchema `json:"schemas"`
}

type discSchema struct {
	Ref        string                `json:"$ref"`
	Enum       []string              `json:"enum"`
	Properties map[string]discSchema `json:"properties"`
	Items      *discSchema           `json:"items"`
}

// loadDiscovery reads the discovery document rel (e.g.
// compute/v1/compute-api.json) of the google.golang.org/api version go.mod
// pins: the API the provider's client speaks.
func loadDiscovery(t *testing.T, rel string) discovery {
	t.Helper()
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "google.golang.org/api").Output()
	if err != nil {
		t.Fatalf("go list -m google.golang.org/api: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), rel))
	if err != nil {
		t.Fatal(err)
	}
	var d discovery
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return d
}

// enums returns every enum below the schema name, by path ("rules[]" for
// list items): "type", "rules[].rateLimitOptions.enforceOnKey", ...
func (d discovery) enums(name string) map[string][]string {
	out := map[string][]string{}
	var walk func(s discSchema, path string, seen map[string]bool)
	walk = func(s discSchema, path string, seen map[string]bool) {
		if s.Ref != "" {
			if seen[s.Ref] {
				return
			}
			seen = maps1(seen, s.Ref)
			s = d.Schemas[s.Ref]
		}
		if len(s.Enum) > 0 {
			out[path] = s.Enum
		}
		for k, p := range s.Properties {
			walk(p, strings.TrimPrefix(path+"."+k, "."), seen)
		}
		if s.Items != nil {
			walk(*s.Items, path+"[]", seen)
		}
	}
	walk(discSchema{Ref: name}, "", map[string]bool{})
	return out
}

func maps1(m map[string]bool, k string) map[string]bool {
	out := make(map[string]bool, len(m)+1)
	for kk := range m {
		out[kk] = true
	}
	out[k] = true
	return out
}

// target is where a discovery field lives in our CRDs.
type target struct {
	plural string // CRD
	path   string // below the schema's root
	field  string // the field's path below spec.forProvider, as apivalues names it
}

// targets maps a discovery path of SecurityPolicy or AddressGroup to the
// CRD fields that hold it: a policy's fields in SecurityPolicy; a rule's in
// SecurityPolicy's rules and defaultRule and in SecurityPolicyRule.
func targets(schema, path string) []target {
	if schema == "AddressGroup" {
		// No AddressGroup field is open or warned about.
		return []target{{"addressgroups", "spec.forProvider." + path, ""}}
	}
	rest, rule := strings.CutPrefix(path, "rules[].")
	if !rule {
		return []target{{"securitypolicies", "spec.forProvider." + path, path}}
	}
	return []target{
		{"securitypolicies", "spec.forProvider." + path, rest},
		{"securitypolicies", "spec.forProvider.defaultRule." + rest, rest},
		{"securitypolicyrules", "spec.forProvider." + rest, rest},
	}
}

// refusedOnPurpose are the values GCP's discovery documents list that the
// CRDs refuse on purpose: "unspecified" placeholders, which are no setting
// (leave the field unset instead).
var refusedOnPurpose = map[string][]string{
	"spec.forProvider.ddosProtectionConfig.ddosAdaptiveProtection": {"DDOS_ADAPTIVE_PROTECTION_UNSPECIFIED", "UNSPECIFIED_ADAPTIVE_PROTECTION"},
	"spec.forProvider.type":      {"TYPE_UNSPECIFIED"},    // AddressGroup
	"spec.forProvider.purpose[]": {"PURPOSE_UNSPECIFIED"}, // AddressGroup
}

// fieldNamed returns the apivalues Field for a path below spec.forProvider.
func fieldNamed(name string) (Field, bool) {
	i := slices.IndexFunc(Fields, func(f Field) bool { return f.Name == name })
	if i < 0 {
		return Field{}, false
	}
	return Fields[i], true
}

// discoveryFields are the enums of the GCP schemas our kinds manage, from
// the discovery documents of the pinned client.
func discoveryFields(t *testing.T) map[string]map[string][]string {
	t.Helper()
	compute := loadDiscovery(t, "compute/v1/compute-api.json")
	networksecurity := loadDiscovery(t, "networksecurity/v1/networksecurity-api.json")
	t.Logf("compute v1 discovery revision %s, networksecurity v1 revision %s", compute.Revision, networksecurity.Revision)
	return map[string]map[string][]string{
		"SecurityPolicy": compute.enums("SecurityPolicy"),
		"AddressGroup":   networksecurity.enums("AddressGroup"),
	}
}

// TestDiscoveryValuesAccepted fails when our CRDs refuse a value GCP's
// discovery document lists for a field, or when the provider would warn
// that such a value is unknown: after a bump of google.golang.org/api, a
// value GCP added must be admitted and known before the bump is merged.
func TestDiscoveryValuesAccepted(t *testing.T) {
	defs := crds(t)
	matched := map[string]bool{}
	checked := 0
	for schema, enums := range discoveryFields(t) {
		for path, values := range enums {
			for _, tg := range targets(schema, path) {
				s, ok := schemaAt(defs[tg.plural], tg.path)
				if !ok {
					continue // a GCP field the provider does not expose
				}
				f, hasField := fieldNamed(tg.field)
				matched[tg.field] = matched[tg.field] || hasField
				for _, v := range values {
					checked++
					why := refusal(t, s, v)
					if slices.Contains(refusedOnPurpose[tg.path], v) {
						if why == "" {
							t.Errorf("%s %s: %q is listed as refused on purpose, yet admitted", tg.plural, tg.path, v)
						}
						continue
					}
					if why != "" {
						t.Errorf("%s %s: GCP's %s.%s lists %q, and the CRD refuses it: %s", tg.plural, tg.path, schema, path, v, why)
					}
					if hasField {
						if fd, warn := f.Check(tg.path, v); warn && fd.Kind == Unknown {
							t.Errorf("%s %s: GCP lists %q, which the provider would report as unknown: add it to apivalues.%s", tg.plural, tg.path, v, tg.field)
						}
					}
				}
			}
		}
	}
	// The mapping must keep finding our fields: a test that checks nothing
	// passes whatever the CRDs say.
	for _, f := range Fields {
		// GCP documents action and requestBodyInspectionSize in prose, not
		// in an enum.
		if f.Name != Action.Name && f.Name != RequestBodyInspectionSize.Name && !matched[f.Name] {
			t.Errorf("apivalues.%s: no discovery enum reached it; the mapping from GCP's schema to the CRDs is broken", f.Name)
		}
	}
	if checked < 100 {
		t.Errorf("checked %d values of GCP's enums against the CRDs, want at least 100", checked)
	}
}

// TestNewDiscoveryValue: a value GCP adds to an open field's enum is
// admitted and reported as unknown; the same value in a closed field is
// refused by admission, which is what closed means.
func TestNewDiscoveryValue(t *testing.T) {
	defs := crds(t)
	open, closed := 0, 0
	for schema, enums := range discoveryFields(t) {
		for path, values := range enums {
			newValue := "NEW_VALUE_GCP_ADDED"
			if strings.HasSuffix(values[0], "KB") {
				newValue = "128KB"
			}
			for _, tg := range targets(schema, path) {
				s, ok := schemaAt(defs[tg.plural], tg.path)
				if !ok {
					continue
				}
				why := refusal(t, s, newValue)
				f, hasField := fieldNamed(tg.field)
				if !hasField || !f.Open {
					closed++
					if why == "" {
						t.Errorf("%s %s is closed (its CRD lists GCP's values), yet admits %q: make it open in apivalues or give it an enum", tg.plural, tg.path, newValue)
					}
					continue
				}
				open++
				if why != "" {
					t.Errorf("%s %s is open, yet admission refuses GCP's new value %q: %s", tg.plural, tg.path, newValue, why)
				}
				if fd, warn := f.Check(tg.path, newValue); !warn || fd.Kind != Unknown {
					t.Errorf("%s %s: GCP's new value %q is admitted without an unknown-value warning", tg.plural, tg.path, newValue)
				}
			}
		}
	}
	if open == 0 || closed == 0 {
		t.Errorf("%d open and %d closed fields checked; want some of each", open, closed)
	}
}

// TestProvidedLabelsRefused: the labels the provider sets cannot be set in
// spec.forProvider.labels, and other labels can.
func TestProvidedLabelsRefused(t *testing.T) {
	defs := crds(t)
	provided := []string{"armorplane-owner", "crossplane-kind", "crossplane-name", "crossplane-namespace",
		"crossplane-providerconfig", "crossplane-providerconfig-kind"}
	for _, plural := range []string{"securitypolicies", "addressgroups"} {
		s, ok := schemaAt(defs[plural], "spec.forProvider.labels")
		if !ok {
			t.Fatalf("%s has no spec.forProvider.labels", plural)
		}
		for _, k := range provided {
			if refusal(t, s, map[string]any{"team": "a", k: "x"}) == "" {
				t.Errorf("%s: spec.forProvider.labels may set %s, which the provider sets", plural, k)
			}
		}
		if why := refusal(t, s, map[string]any{"team": "a", "crossplane-extra": "x"}); why != "" {
			t.Errorf("%s: spec.forProvider.labels refuses labels the provider does not set: %s", plural, why)
		}
	}
}
