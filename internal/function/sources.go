package function

// Sources the function reads itself, through Crossplane's required resources: LoadBalancer
// Services, one field of any namespaced object, and a key of a ConfigMap. Unlike Nodes these
// objects are small and few, so the function reads them directly instead of through an
// AddressSet. Every one of them is read from the IPAllowlist's own namespace: the selectors
// the function hands Crossplane always carry that namespace, and an object from any other
// namespace is left out even if one reaches the function.

import (
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"

	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"
)

// ServiceSource selects Services of type LoadBalancer in the IPAllowlist's namespace by label
// and allows their load balancer IPs (status.loadBalancer.ingress[].ip).
type ServiceSource struct {
	Name        string            `json:"name"`
	MatchLabels map[string]string `json:"matchLabels"`
	// Required holds the rules when no selected Service has an IP, as for a node source.
	Required bool `json:"required,omitempty"`
}

// ObjectSource allows the IPs or CIDRs at one field of objects of any namespaced kind in the
// IPAllowlist's namespace, selected by name or by label: a provider-gcp Address's
// status.atProvider.address, a NAT gateway's published IPs.
type ObjectSource struct {
	Name        string            `json:"name"`
	APIVersion  string            `json:"apiVersion"`
	Kind        string            `json:"kind"`
	ObjectName  string            `json:"objectName,omitempty"`
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// FieldPath is where the value is: a string or a list of strings. It may hold wildcards
	// ([*]) to read one field of each element of a list.
	FieldPath string `json:"fieldPath"`
	Required  bool   `json:"required,omitempty"`
}

// ConfigMapSource allows the IPs or CIDRs listed in one key of a ConfigMap in the IPAllowlist's
// namespace, separated by whitespace, commas or newlines; '#' starts a comment.
type ConfigMapSource struct {
	Name          string `json:"name"`
	ConfigMapName string `json:"configMapName"`
	Key           string `json:"key"`
	Required      bool   `json:"required,omitempty"`
}

// Kinds of source, as messages and requirement keys name them.
const (
	kindService   = "service"
	kindObject    = "object"
	kindConfigMap = "configMap"
)

// readSource is one service, object or ConfigMap source, whatever its kind.
type readSource struct {
	kind, name string
	required   bool
}

// label names the source in messages: service source "nat".
func (r readSource) label() string { return fmt.Sprintf("%s source %q", r.kind, r.name) }

// key is the name under which the function asks Crossplane for the source's resources.
func (r readSource) key() string { return r.kind + "Sources/" + r.name }

// readSources are the spec's service, object and ConfigMap sources, in that order.
// readSourceNames are the names of the sources the function reads itself.
func (s Spec) readSourceNames() []string {
	out := make([]string, 0, len(s.ServiceSources)+len(s.ObjectSources)+len(s.ConfigMapSources))
	for _, src := range s.readSources() {
		out = append(out, src.name)
	}
	return out
}

func (s Spec) readSources() []readSource {
	out := make([]readSource, 0, len(s.ServiceSources)+len(s.ObjectSources)+len(s.ConfigMapSources))
	for _, src := range s.ServiceSources {
		out = append(out, readSource{kindService, src.Name, src.Required})
	}
	for _, src := range s.ObjectSources {
		out = append(out, readSource{kindObject, src.Name, src.Required})
	}
	for _, src := range s.ConfigMapSources {
		out = append(out, readSource{kindConfigMap, src.Name, src.Required})
	}
	return out
}

// validateReadSources reports the first service, object or ConfigMap source that cannot be
// read safely: selectors that are empty or not label selectors at all, names that are not
// object names, a field path that does not parse, and Secrets, whose values must never reach
// the IPAllowlist's events.
func (s Spec) validateReadSources() error {
	for _, src := range s.ServiceSources {
		if len(src.MatchLabels) == 0 {
			return fmt.Errorf("service source %q: matchLabels must name at least one label", src.Name)
		}
		if err := validateLabels(src.MatchLabels); err != nil {
			return fmt.Errorf("service source %q: %w", src.Name, err)
		}
	}
	for _, src := range s.ObjectSources {
		label := fmt.Sprintf("object source %q", src.Name)
		gv, err := schema.ParseGroupVersion(src.APIVersion)
		if err != nil || gv.Version == "" {
			return fmt.Errorf("%s: apiVersion %q is not group/version or version", label, src.APIVersion)
		}
		if !kindPattern.MatchString(src.Kind) {
			return fmt.Errorf("%s: kind %q is not a kind (such as Address)", label, src.Kind)
		}
		if gv.Group == "" && src.Kind == "Secret" {
			return fmt.Errorf("%s: Secrets cannot be read: their values would appear in the IPAllowlist's warnings", label)
		}
		if (src.ObjectName == "") == (len(src.MatchLabels) == 0) {
			return fmt.Errorf("%s: set exactly one of objectName and matchLabels", label)
		}
		if src.ObjectName != "" {
			if errs := validation.IsDNS1123Subdomain(src.ObjectName); len(errs) > 0 {
				return fmt.Errorf("%s: objectName %q: %s", label, src.ObjectName, strings.Join(errs, "; "))
			}
		}
		if err := validateLabels(src.MatchLabels); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		if src.FieldPath == "" {
			return fmt.Errorf("%s: fieldPath is required", label)
		}
		if _, err := fieldpath.Parse(src.FieldPath); err != nil {
			return fmt.Errorf("%s: fieldPath %q: %v", label, src.FieldPath, err)
		}
	}
	for _, src := range s.ConfigMapSources {
		label := fmt.Sprintf("configMap source %q", src.Name)
		if errs := validation.IsDNS1123Subdomain(src.ConfigMapName); len(errs) > 0 {
			return fmt.Errorf("%s: configMapName %q: %s", label, src.ConfigMapName, strings.Join(errs, "; "))
		}
		if errs := validation.IsConfigMapKey(src.Key); len(errs) > 0 {
			return fmt.Errorf("%s: key %q: %s", label, src.Key, strings.Join(errs, "; "))
		}
	}
	return nil
}

// kindPattern is what a kind looks like: Address, SecurityPolicy.
var kindPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,62}$`)

func validateLabels(l map[string]string) error {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(l[k]); len(errs) > 0 {
			return fmt.Errorf("label %s=%q: %s", k, l[k], strings.Join(errs, "; "))
		}
	}
	return nil
}

// Requirements are the resources the function asks Crossplane to fetch: one selector per
// service, object and ConfigMap source, each in namespace, the IPAllowlist's. It fails when
// there is a source to read and no namespace: a selector without one would match by label
// across every namespace.
func Requirements(s Spec, namespace string) (map[string]*fnv1.ResourceSelector, error) {
	out := map[string]*fnv1.ResourceSelector{}
	if len(s.readSources()) == 0 {
		return out, nil
	}
	if namespace == "" {
		return nil, fmt.Errorf("serviceSources, objectSources and configMapSources need a namespaced IPAllowlist: they read objects of its namespace only")
	}
	byLabels := func(l map[string]string) *fnv1.ResourceSelector_MatchLabels {
		c := make(map[string]string, len(l))
		for k, v := range l {
			c[k] = v
		}
		return &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: c}}
	}
	for _, src := range s.ServiceSources {
		out[readSource{kind: kindService, name: src.Name}.key()] = &fnv1.ResourceSelector{
			ApiVersion: "v1", Kind: "Service", Match: byLabels(src.MatchLabels), Namespace: &namespace,
		}
	}
	for _, src := range s.ObjectSources {
		sel := &fnv1.ResourceSelector{ApiVersion: src.APIVersion, Kind: src.Kind, Namespace: &namespace}
		if src.ObjectName != "" {
			sel.Match = &fnv1.ResourceSelector_MatchName{MatchName: src.ObjectName}
		} else {
			sel.Match = byLabels(src.MatchLabels)
		}
		out[readSource{kind: kindObject, name: src.Name}.key()] = sel
	}
	for _, src := range s.ConfigMapSources {
		out[readSource{kind: kindConfigMap, name: src.Name}.key()] = &fnv1.ResourceSelector{
			ApiVersion: "v1", Kind: "ConfigMap", Match: &fnv1.ResourceSelector_MatchName{MatchName: src.ConfigMapName}, Namespace: &namespace,
		}
	}
	return out, nil
}

// RequireSources asks Crossplane, in rsp, for the resources of every service, object and
// ConfigMap source. It asks for nothing when there is none.
func RequireSources(rsp *fnv1.RunFunctionResponse, s Spec, namespace string) error {
	sel, err := Requirements(s, namespace)
	if err != nil || len(sel) == 0 {
		return err
	}
	if rsp.Requirements == nil {
		rsp.Requirements = &fnv1.Requirements{}
	}
	rsp.Requirements.Resources = sel
	return nil
}

// Read is what one service, object or ConfigMap source yields, as read from the objects
// Crossplane fetched for it.
type Read struct {
	// Values are the strings read, each to be parsed as an IP address or CIDR.
	Values []Value
	// Notes are findings to warn about, each naming its object: a host name where an IP was
	// wanted, a selected object without the field.
	Notes []string
	// Empty says what the source matched, for the message when no value makes a range.
	Empty string
}

// Value is one string read from an object.
type Value struct {
	Text string
	// From names the object and the field: Service team-a/nat status.loadBalancer.ingress[0].ip.
	From string
	// Quote says the value may be quoted in a warning. Values of arbitrary objects are not:
	// the IPAllowlist's events must not show what its team could not otherwise read.
	Quote bool
}

// ReadSources reads each service, object and ConfigMap source from the resources Crossplane
// fetched (required, keyed by requirement). pending names the sources Crossplane has not
// fetched yet. err names every named object (objectName, configMapName, a ConfigMap's key)
// that does not exist: a name is explicit, so its absence is an error, not "matches nothing".
func ReadSources(s Spec, namespace string, required map[string][]resource.Required) (read map[string]Read, pending []string, err error) {
	sr := &sourceReader{namespace: namespace, required: required, read: map[string]Read{}}
	for _, src := range s.ServiceSources {
		sr.services(src)
	}
	for _, src := range s.ObjectSources {
		sr.objects(src)
	}
	for _, src := range s.ConfigMapSources {
		sr.configMap(src)
	}
	if len(sr.missing) > 0 {
		return nil, sr.pending, fmt.Errorf("%s; the rules are left as they are", strings.Join(sr.missing, "; "))
	}
	return sr.read, sr.pending, nil
}

// A sourceReader reads the sources of one IPAllowlist from what Crossplane
// fetched, noting the sources not fetched yet (pending) and those whose
// object is missing or unreadable (missing).
type sourceReader struct {
	namespace string
	required  map[string][]resource.Required
	read      map[string]Read
	pending   []string
	missing   []string
}

// fetched returns what Crossplane fetched for src in the IPAllowlist's
// namespace, and which objects of other namespaces it left out; ok is
// false while Crossplane has not fetched it yet.
func (sr *sourceReader) fetched(src readSource) (us []*unstructured.Unstructured, foreign []string, ok bool) {
	rs, ok := sr.required[src.key()]
	if !ok {
		sr.pending = append(sr.pending, strconv.Quote(src.name))
		return nil, nil, false
	}
	out := make([]*unstructured.Unstructured, 0, len(rs))
	for _, r := range rs {
		if r.Resource != nil {
			out = append(out, r.Resource)
		}
	}
	us, foreign = inNamespace(out, sr.namespace)
	return us, foreign, true
}

func (sr *sourceReader) services(src ServiceSource) {
	us, foreign, ok := sr.fetched(readSource{kind: kindService, name: src.Name})
	if !ok {
		return
	}
	r := readServices(src, sr.namespace, us)
	r.Notes = append(foreign, r.Notes...)
	sr.read[src.Name] = r
}

func (sr *sourceReader) objects(src ObjectSource) {
	rs := readSource{kind: kindObject, name: src.Name}
	us, foreign, ok := sr.fetched(rs)
	switch {
	case !ok:
		return
	case src.ObjectName != "" && len(us) == 0:
		sr.missing = append(sr.missing, fmt.Sprintf("%s: %s %s/%s not found", rs.label(), src.Kind, sr.namespace, src.ObjectName))
		return
	}
	r := readObjects(src, sr.namespace, us)
	r.Notes = append(foreign, r.Notes...)
	sr.read[src.Name] = r
}

func (sr *sourceReader) configMap(src ConfigMapSource) {
	rs := readSource{kind: kindConfigMap, name: src.Name}
	us, _, ok := sr.fetched(rs)
	switch {
	case !ok:
		return
	case len(us) == 0:
		sr.missing = append(sr.missing, fmt.Sprintf("%s: ConfigMap %s/%s not found", rs.label(), sr.namespace, src.ConfigMapName))
		return
	}
	r, err := readConfigMap(src, us[0])
	if err != nil {
		sr.missing = append(sr.missing, fmt.Sprintf("%s: %v", rs.label(), err))
		return
	}
	sr.read[src.Name] = r
}

// inNamespace keeps the objects of namespace, and says which others were left out. Crossplane
// fetches only from namespace, as the function asks; this is the function's own check.
func inNamespace(us []*unstructured.Unstructured, namespace string) (kept []*unstructured.Unstructured, notes []string) {
	for _, u := range us {
		if u.GetNamespace() != namespace {
			notes = append(notes, fmt.Sprintf("%s %s/%s left out: not in namespace %s, the IPAllowlist's", u.GetKind(), u.GetNamespace(), u.GetName(), namespace))
			continue
		}
		kept = append(kept, u)
	}
	return kept, notes
}

func readServices(src ServiceSource, namespace string, us []*unstructured.Unstructured) Read {
	r := Read{}
	lbs := 0
	for _, u := range us {
		p := fieldpath.Pave(u.Object)
		if t, _ := p.GetString("spec.type"); t != "LoadBalancer" {
			continue
		}
		lbs++
		id := fmt.Sprintf("Service %s/%s", u.GetNamespace(), u.GetName())
		var ingress []any
		_ = p.GetValueInto("status.loadBalancer.ingress", &ingress)
		if len(ingress) == 0 {
			r.Notes = append(r.Notes, id+" has no load balancer address yet")
			continue
		}
		for i, in := range ingress {
			m, _ := in.(map[string]any)
			ip, _ := m["ip"].(string)
			host, _ := m["hostname"].(string)
			switch {
			case ip != "":
				r.Values = append(r.Values, Value{Text: ip, From: fmt.Sprintf("%s status.loadBalancer.ingress[%d].ip", id, i), Quote: true})
			case host != "":
				r.Notes = append(r.Notes, fmt.Sprintf("%s: ingress host name %q left out: Cloud Armor matches IP addresses, not names", id, host))
			}
		}
	}
	r.Empty = fmt.Sprintf("%d Service(s) match labels %s in namespace %s, %d of type LoadBalancer", len(us), labelString(src.MatchLabels), namespace, lbs)
	return r
}

func readObjects(src ObjectSource, namespace string, us []*unstructured.Unstructured) Read {
	r := Read{}
	for _, u := range us {
		id := fmt.Sprintf("%s %s/%s", src.Kind, u.GetNamespace(), u.GetName())
		vals, notes := valuesAt(u, src.FieldPath)
		for i := range vals {
			vals[i].From = id + " " + vals[i].From
		}
		for _, n := range notes {
			r.Notes = append(r.Notes, id+" "+n)
		}
		if len(vals) == 0 && len(notes) == 0 && src.ObjectName == "" {
			r.Notes = append(r.Notes, fmt.Sprintf("%s has no value at %s yet", id, src.FieldPath))
		}
		r.Values = append(r.Values, vals...)
	}
	if src.ObjectName != "" {
		r.Empty = fmt.Sprintf("%s %s/%s has no address at %s", src.Kind, namespace, src.ObjectName, src.FieldPath)
	} else {
		r.Empty = fmt.Sprintf("%d %s object(s) match labels %s in namespace %s, none with an address at %s", len(us), src.Kind, labelString(src.MatchLabels), namespace, src.FieldPath)
	}
	return r
}

// valuesAt reads the strings at path of u (wildcards expanded): a string, or a list whose
// string elements are taken. Anything else is a note; an absent field is neither.
func valuesAt(u *unstructured.Unstructured, path string) ([]Value, []string) {
	p := fieldpath.Pave(u.Object)
	paths := []string{path}
	if strings.Contains(path, "*") {
		expanded, err := p.ExpandWildcards(path)
		if err != nil {
			return nil, []string{fmt.Sprintf("%s: %v", path, err)}
		}
		sort.Strings(expanded)
		paths = expanded
	}
	var vals []Value
	var notes []string
	for _, at := range paths {
		v, err := p.GetValue(at)
		if err != nil {
			continue // absent
		}
		switch x := v.(type) {
		case string:
			vals = append(vals, Value{Text: x, From: at})
		case []any:
			for i, e := range x {
				s, ok := e.(string)
				if !ok {
					notes = append(notes, fmt.Sprintf("%s[%d] left out: %s, not a string", at, i, typeName(e)))
					continue
				}
				vals = append(vals, Value{Text: s, From: fmt.Sprintf("%s[%d]", at, i)})
			}
		case nil:
		default:
			notes = append(notes, fmt.Sprintf("%s left out: %s, want a string or a list of strings", at, typeName(x)))
		}
	}
	return vals, notes
}

func typeName(v any) string {
	switch v.(type) {
	case map[string]any:
		return "an object"
	case []any:
		return "a list"
	case bool:
		return "a boolean"
	case float64, int64, int:
		return "a number"
	case nil:
		return "null"
	}
	return fmt.Sprintf("a %T", v)
}

func readConfigMap(src ConfigMapSource, u *unstructured.Unstructured) (Read, error) {
	id := fmt.Sprintf("ConfigMap %s/%s", u.GetNamespace(), u.GetName())
	text, found, err := unstructured.NestedString(u.Object, "data", src.Key)
	if err != nil || !found {
		if _, inBinary, _ := unstructured.NestedFieldNoCopy(u.Object, "binaryData", src.Key); inBinary {
			return Read{}, fmt.Errorf("%s holds key %q in binaryData, not data: list the addresses as text", id, src.Key)
		}
		return Read{}, fmt.Errorf("%s has no key %q", id, src.Key)
	}
	r := Read{Empty: fmt.Sprintf("%s key %q lists no address", id, src.Key)}
	for _, t := range ParseList(text) {
		r.Values = append(r.Values, Value{Text: t.Text, From: fmt.Sprintf("%s key %s line %d", id, src.Key, t.Line), Quote: true})
	}
	return r, nil
}

// Token is one entry of a list of addresses, and the line it is on (from 1).
type Token struct {
	Text string
	Line int
}

// ParseList splits a list of addresses: entries are separated by whitespace, commas or
// newlines, and '#' comments out the rest of its line.
func ParseList(text string) []Token {
	var out []Token
	for i, line := range strings.Split(text, "\n") {
		if c := strings.IndexByte(line, '#'); c >= 0 {
			line = line[:c]
		}
		for _, f := range strings.FieldsFunc(line, func(r rune) bool {
			return r == ',' || r == ' ' || r == '\t' || r == '\r' || r == '\v' || r == '\f'
		}) {
			out = append(out, Token{Text: f, Line: i + 1})
		}
	}
	return out
}

// maxLeftOut is how many malformed values of one source are named, each in its own warning;
// the rest are counted in one more.
const maxLeftOut = 5

// collectRead adds the ranges of a service, object or ConfigMap source through add and
// returns how many it added and the warnings it raises: its notes, and each malformed value,
// left out while the others are kept.
func collectRead(src readSource, r Read, add func(Value) error) (found int, warnings []string) {
	for _, n := range r.Notes {
		warnings = append(warnings, src.label()+": "+n)
	}
	bad := 0
	for _, v := range r.Values {
		err := add(v)
		if err == nil {
			found++
			continue
		}
		bad++
		if bad > maxLeftOut {
			continue
		}
		if v.Quote {
			warnings = append(warnings, fmt.Sprintf("%s: %s left out: %v", src.label(), v.From, err))
		} else {
			warnings = append(warnings, fmt.Sprintf("%s: %s left out: a value of %d character(s) that is not an IP address or a CIDR without host bits (not shown)", src.label(), v.From, len(v.Text)))
		}
	}
	if bad > maxLeftOut {
		warnings = append(warnings, fmt.Sprintf("%s: %d more malformed value(s) left out", src.label(), bad-maxLeftOut))
	}
	return found, warnings
}

// readRanges turns what each service, object and ConfigMap source read into its canonical
// CIDRs, in spec order: names are the sources that yield any, cidrs their ranges. A source
// that yields none is unmatched, with a warning, or, when required, an error that holds the
// allowlist as it is. A malformed value is left out with a warning.
func readRanges(s Spec, read map[string]Read) (names []string, cidrs map[string][]string, unmatched, warnings []string, err error) {
	cidrs = map[string][]string{}
	for _, src := range s.readSources() {
		r := read[src.name]
		seen := map[string]bool{}
		found, w := collectRead(src, r, func(v Value) error {
			p, err := ParseRange(v.Text)
			if err == nil && !seen[p.String()] {
				seen[p.String()] = true
				cidrs[src.name] = append(cidrs[src.name], p.String())
			}
			return err
		})
		warnings = append(warnings, w...)
		if found > 0 {
			names = append(names, src.name)
			continue
		}
		msg := fmt.Sprintf("%s: no address: %s", src.label(), r.Empty)
		if src.required {
			return nil, nil, nil, nil, fmt.Errorf("%s, and the source is required; the rules are left as they are", msg)
		}
		unmatched = append(unmatched, src.name)
		warnings = append(warnings, msg)
	}
	return names, cidrs, unmatched, warnings, nil
}
