// Package sourceread reads the addresses that objects of a namespace
// publish: the load balancer IPs of Services, the values at one field of any
// object, the list in a ConfigMap's key. It only extracts and canonicalizes;
// whoever fetches the objects decides which ones it may read.
package sourceread

import (
	"fmt"
	"net/netip"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"

	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

// Value is one string read from an object, to be parsed as an IP address
// or a CIDR.
type Value struct {
	Text string
	// From names the object and the field: Service team-a/nat
	// status.loadBalancer.ingress[0].ip.
	From string
	// Quote says the value may be shown in a warning. Values of arbitrary
	// objects may not: whoever reads the warnings may not read the object.
	Quote bool
}

// Found is what one object holds for a source.
type Found struct {
	Values []Value
	// Notes are findings to warn about, each naming its object: a host
	// name where an IP was wanted, a selected object without the field.
	Notes []string
}

// Service reads the load balancer IPs of a Service; lb is false, and
// nothing is read, when it is not of type LoadBalancer.
func Service(u *unstructured.Unstructured) (f Found, lb bool) {
	p := fieldpath.Pave(u.Object)
	if t, _ := p.GetString("spec.type"); t != "LoadBalancer" {
		return Found{}, false
	}
	id := fmt.Sprintf("Service %s/%s", u.GetNamespace(), u.GetName())
	var ingress []any
	_ = p.GetValueInto("status.loadBalancer.ingress", &ingress)
	if len(ingress) == 0 {
		return Found{Notes: []string{id + " has no load balancer address yet"}}, true
	}
	for i, in := range ingress {
		m, _ := in.(map[string]any)
		ip, _ := m["ip"].(string)
		host, _ := m["hostname"].(string)
		switch {
		case ip != "":
			f.Values = append(f.Values, Value{Text: ip, From: fmt.Sprintf("%s status.loadBalancer.ingress[%d].ip", id, i), Quote: true})
		case host != "":
			f.Notes = append(f.Notes, fmt.Sprintf("%s: ingress host name %q left out: Cloud Armor matches IP addresses, not names", id, host))
		}
	}
	return f, true
}

// Object reads the strings at fieldPath of u, an object of kind: a string,
// or a list whose string elements are taken; [*] expands to each element
// of a list. Anything else there is a note that names its type, never its
// value; an object without the field is a note too.
func Object(u *unstructured.Unstructured, kind, fieldPath string) Found {
	id := fmt.Sprintf("%s %s/%s", kind, u.GetNamespace(), u.GetName())
	vals, notes := valuesAt(u, fieldPath)
	f := Found{Values: vals}
	for i := range f.Values {
		f.Values[i].From = id + " " + f.Values[i].From
	}
	for _, n := range notes {
		f.Notes = append(f.Notes, id+" "+n)
	}
	if len(vals) == 0 && len(notes) == 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("%s has no value at %s yet", id, fieldPath))
	}
	return f
}

// valuesAt reads the strings at path of u (wildcards expanded): a string,
// or a list whose string elements are taken. Anything else is a note; an
// absent field is neither.
func valuesAt(u *unstructured.Unstructured, path string) ([]Value, []string) {
	p := fieldpath.Pave(u.Object)
	paths := []string{path}
	if strings.Contains(path, "*") {
		expanded, err := p.ExpandWildcards(path)
		if fieldpath.IsNotFound(err) {
			return nil, nil
		}
		if err != nil {
			// The error names path segments, never values.
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

// typeName says what a value is without showing it.
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

// ConfigMap reads the list of addresses in key of a ConfigMap's data. A key
// that is missing, or only in binaryData, is an error: a key is named
// explicitly, so its absence is not "no address".
func ConfigMap(u *unstructured.Unstructured, key string) (Found, error) {
	id := fmt.Sprintf("ConfigMap %s/%s", u.GetNamespace(), u.GetName())
	text, found, err := unstructured.NestedString(u.Object, "data", key)
	if err != nil || !found {
		if _, inBinary, _ := unstructured.NestedFieldNoCopy(u.Object, "binaryData", key); inBinary {
			return Found{}, fmt.Errorf("%s holds key %q in binaryData, not data: list the addresses as text", id, key)
		}
		return Found{}, fmt.Errorf("%s has no key %q", id, key)
	}
	f := Found{}
	for _, t := range ParseList(text) {
		f.Values = append(f.Values, Value{Text: t.Text, From: fmt.Sprintf("%s key %s line %d", id, key, t.Line), Quote: true})
	}
	return f, nil
}

// Token is one entry of a list of addresses, and the line it is on (from 1).
type Token struct {
	Text string
	Line int
}

// ParseList splits a list of addresses: entries are separated by
// whitespace, commas or newlines, and '#' comments out the rest of its line.
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

// MaxMalformedNamed is how many malformed values of one source are named,
// each in a warning of its own; the rest are counted in one more.
const MaxMalformedNamed = 5

// MaxNotesNamed is how many notes of one source are kept as warnings; the
// rest are counted in one more, so that a namespace of many objects
// without the field does not flood a status and its events.
const MaxNotesNamed = 20

// Result is what a source holds once canonical.
type Result struct {
	// Prefixes are the distinct canonical prefixes, sorted, IPv4 first.
	// They may be wider than a host: a ConfigMap may list a /28.
	Prefixes []netip.Prefix
	// Warnings are the notes and the malformed values left out, sorted.
	Warnings []string
}

// Canonical parses every value of found into its canonical prefix (a CIDR
// with host bits set is refused, not widened) and keeps each once. A
// malformed value is left out with a warning, the others kept: one broken
// entry must not stop the source following the rest.
func Canonical(found ...Found) Result {
	var out Result
	var notes []string
	seen := map[netip.Prefix]bool{}
	bad := 0
	for _, f := range found {
		notes = append(notes, f.Notes...)
		for _, v := range f.Values {
			p, err := iprange.Parse(v.Text)
			if err == nil {
				if !seen[p] {
					seen[p] = true
					out.Prefixes = append(out.Prefixes, p)
				}
				continue
			}
			bad++
			if bad <= MaxMalformedNamed {
				out.Warnings = append(out.Warnings, malformed(v, err))
			}
		}
	}
	if bad > MaxMalformedNamed {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d more malformed value(s) left out", bad-MaxMalformedNamed))
	}
	slices.Sort(notes)
	if len(notes) > MaxNotesNamed {
		notes = append(notes[:MaxNotesNamed], fmt.Sprintf("%d more finding(s) not listed", len(notes)-MaxNotesNamed))
	}
	out.Warnings = append(out.Warnings, notes...)
	slices.SortFunc(out.Prefixes, netip.Prefix.Compare)
	slices.Sort(out.Warnings)
	return out
}

// malformed is the warning for v, left out: quoted only when v may be.
func malformed(v Value, err error) string {
	if v.Quote {
		return fmt.Sprintf("%s left out: %v", v.From, err)
	}
	return fmt.Sprintf("%s left out: a value of %d character(s) that is not an IP address or a CIDR without host bits (not shown)", v.From, len(v.Text))
}
