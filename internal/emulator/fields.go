package emulator

import (
	"bytes"
	"encoding/json"
	"net/http"
	"reflect"
	"sort"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Partial responses: the fields= system parameter every Google API accepts
// ("Selector specifying which fields to include in a partial response",
// discovery document). The syntax is Google's documented one:
//
//	a,b        several fields
//	a/b        field b inside a (a.b is accepted too)
//	a(b,c)     sub-fields b and c of a; for a list, of each element
//	*          every field at that level (explicit names next to it win)
//
// e.g. fields=name,rules(priority,action) or fields=items(name,id),nextPageToken.

// A selection is a parsed fields= value: each selected key maps to nil (the
// whole value) or to the selection inside it.
type selection map[string]selection

// errFieldSelection is the 400 for a fields= value that does not parse or
// names a field the response does not have (wording chosen after Google's
// "Invalid field selection" documentation).
func errFieldSelection(what string) *core.Error {
	return &core.Error{Code: 400, Reason: "invalidParameter", Status: "INVALID_ARGUMENT",
		Message: "Invalid field selection " + what, Location: "fields", LocationType: "parameter"}
}

// parseFields parses a fields= value; "" selects everything (nil).
func parseFields(in string) (selection, error) {
	if strings.TrimSpace(in) == "" {
		return nil, nil
	}
	p := &fieldsParser{in: in}
	sel := selection{}
	if !p.list(sel) || p.skipSpace() != len(p.in) {
		return nil, errFieldSelection(in)
	}
	return sel, nil
}

type fieldsParser struct {
	in  string
	pos int
}

// skipSpace skips blanks and returns the new position.
func (p *fieldsParser) skipSpace() int {
	for p.pos < len(p.in) && p.in[p.pos] == ' ' {
		p.pos++
	}
	return p.pos
}

// next reports whether the next non-blank byte is c, and consumes it if so.
func (p *fieldsParser) next(c byte) bool {
	if p.skipSpace() < len(p.in) && p.in[p.pos] == c {
		p.pos++
		return true
	}
	return false
}

// list parses item ("," item)*.
func (p *fieldsParser) list(sel selection) bool {
	for {
		if !p.item(sel) {
			return false
		}
		if !p.next(',') {
			return true
		}
	}
}

// item parses name ("/" name)* ["(" list ")"].
func (p *fieldsParser) item(sel selection) bool {
	var path []string
	for {
		name := p.name()
		if name == "" {
			return false
		}
		path = append(path, name)
		if !p.next('/') && !p.next('.') {
			break
		}
	}
	var sub selection
	if p.next('(') {
		sub = selection{}
		if !p.list(sub) || !p.next(')') {
			return false
		}
	}
	sel.add(path, sub)
	return true
}

// name reads a field name or "*".
func (p *fieldsParser) name() string {
	start := p.skipSpace()
	if p.pos < len(p.in) && p.in[p.pos] == '*' {
		p.pos++
		return "*"
	}
	for p.pos < len(p.in) && isNameByte(p.in[p.pos]) {
		p.pos++
	}
	return p.in[start:p.pos]
}

func isNameByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// add selects path, with sub inside its last element (nil: all of it).
// Selecting a field whole wins over selecting parts of it.
func (s selection) add(path []string, sub selection) {
	for _, k := range path[:len(path)-1] {
		next, ok := s[k]
		if ok && next == nil {
			return
		}
		if !ok {
			next = selection{}
			s[k] = next
		}
		s = next
	}
	last := path[len(path)-1]
	cur, ok := s[last]
	switch {
	case ok && cur == nil:
	case sub == nil:
		s[last] = nil
	case !ok:
		s[last] = sub
	default:
		for k, v := range sub {
			cur.add([]string{k}, v)
		}
	}
}

// check rejects a selection naming a field that t (a compute response type)
// does not have, as GCP does. at is the path so far, for the message.
func (s selection) check(t reflect.Type, at string) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	keys := make([]string, 0, len(s))
	for k := range s {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		path := strings.TrimPrefix(at+"/"+k, "/")
		var ft reflect.Type
		switch {
		case t.Kind() == reflect.Map:
			ft = t.Elem()
		case k == "*" && t.Kind() == reflect.Struct:
			continue // every field; what is inside each is not checked
		case t.Kind() == reflect.Struct:
			ft = core.JSONFields(t)[k]
			if ft == nil && core.ServerOnlyKeys[k] {
				ft = reflect.TypeOf("")
			}
		}
		if ft == nil {
			return errFieldSelection(path)
		}
		if sub := s[k]; sub != nil {
			if err := sub.check(ft, path); err != nil {
				return err
			}
		}
	}
	return nil
}

// apply returns the selected part of a decoded JSON value. An object left
// empty by a sub-selection is left out; list elements keep their places.
func (s selection) apply(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(s))
		for k, e := range x {
			sub, ok := s[k]
			if !ok {
				sub, ok = s["*"]
			}
			switch {
			case !ok:
			case sub == nil:
				out[k] = e
			default:
				if pe := sub.apply(e); !isEmptyObject(pe) {
					out[k] = pe
				}
			}
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = s.apply(e)
		}
		return out
	default:
		return v
	}
}

func isEmptyObject(v any) bool {
	m, ok := v.(map[string]any)
	return ok && len(m) == 0
}

// responseType is the compute type a method answers with, against which its
// fields= selection is checked; nil for a method with no body
// (operations.delete).
func responseType(method string) reflect.Type {
	if t, ok := otherResponseTypes[method]; ok {
		return t
	}
	collection, verb, _ := strings.Cut(method, ".")
	ops := strings.HasSuffix(collection, "Operations")
	var v any
	switch {
	case verb == "get" && !ops:
		v = compute.SecurityPolicy{}
	case verb == "getRule":
		v = compute.SecurityPolicyRule{}
	case verb == "list" && ops:
		v = compute.OperationList{}
	case verb == "list":
		v = compute.SecurityPolicyList{}
	case verb == "aggregatedList" && ops:
		v = compute.OperationAggregatedList{}
	case verb == "aggregatedList":
		v = compute.SecurityPoliciesAggregatedList{}
	case verb == "listPreconfiguredExpressionSets":
		v = compute.SecurityPoliciesListPreconfiguredExpressionSetsResponse{}
	case verb == "delete" && ops:
		return nil
	default: // every mutation, operations.get and operations.wait
		v = compute.Operation{}
	}
	return reflect.TypeOf(v)
}

// requestedFields parses and checks the call's fields= parameter; nil means
// the whole response.
func requestedFields(r *http.Request, method string) (selection, error) {
	sel, err := parseFields(r.URL.Query().Get("fields"))
	if sel == nil || err != nil {
		return nil, err
	}
	if t := responseType(method); t != nil {
		if err := sel.check(t, ""); err != nil {
			return nil, err
		}
	}
	return sel, nil
}

// A partialWriter holds a handler's answer back, so that a successful JSON
// body can be cut down to the selected fields. Errors are sent whole.
type partialWriter struct {
	http.ResponseWriter
	sel  selection
	code int
	body bytes.Buffer
}

func (w *partialWriter) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
}

func (w *partialWriter) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}

// flush sends the (filtered) answer.
func (w *partialWriter) flush() {
	w.WriteHeader(http.StatusOK)
	b := w.body.Bytes()
	if w.code >= 200 && w.code < 300 && len(b) > 0 {
		if out, err := w.sel.filter(b); err == nil {
			b = out
		}
	}
	w.ResponseWriter.WriteHeader(w.code)
	_, _ = w.ResponseWriter.Write(b)
}

// filter applies s to a JSON document.
func (s selection) filter(b []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(s.apply(v))
}
