package emulator

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// enumKeys are the JSON names of enum-typed fields in the SecurityPolicy
// schema tree (taken from the compute v1 discovery document). GCP drops an
// enum sent as "" but keeps a plain string sent as "" (R6, reference §a.4).
var enumKeys = map[string]bool{
	"base": true, "ddosAdaptiveProtection": true, "ddosProtection": true,
	"enforceOnKey": true, "enforceOnKeyType": true, "jsonParsing": true,
	"logLevel": true, "op": true, "ruleVisibility": true, "type": true,
	"versionedExpr": true,
}

// serverOnlyKeys are fields real GCP returns that the v1 Go structs lack; a
// client that echoes a GET response back may send them, and GCP accepts that.
var serverOnlyKeys = map[string]bool{"ruleNumber": true, "selfLinkWithId": true}

// decodeBody parses a JSON object into typed (a pointer to a compute struct,
// used for validation) and returns the raw object (numbers kept verbatim,
// used for storage and echoing). what names the message in errors, like the
// Google front end does ("security_policy").
func decodeBody(b []byte, typed any, what string) (map[string]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, core.ErrParse(syntaxDetail(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, core.ErrParse("Unexpected data after the JSON object.")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, core.ErrPayload(fmt.Sprintf("Invalid JSON payload received. Expected an object for '%s'.", what))
	}
	if err := checkKeys(obj, reflect.TypeOf(typed), what); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, typed); err != nil {
		return nil, typeError(err, what)
	}
	return obj, nil
}

func syntaxDetail(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at offset %d.", se.Error(), se.Offset)
	}
	return "Unexpected end of input."
}

func typeError(err error, what string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return core.ErrPayload(fmt.Sprintf("Invalid value at '%s.%s' (%s), %s", what, te.Field, te.Type, te.Value))
	}
	return core.ErrPayload("Invalid JSON payload received. " + err.Error())
}

// checkKeys rejects names the schema does not have. It is exact about case,
// unlike encoding/json, because GCP is.
func checkKeys(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if err := checkKeys(e, t, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
	case map[string]any:
		return checkObject(x, t, path)
	}
	return nil
}

func checkObject(obj map[string]any, t reflect.Type, path string) error {
	if t.Kind() == reflect.Map {
		for k, e := range obj {
			if err := checkKeys(e, t.Elem(), path+"."+k); err != nil {
				return err
			}
		}
		return nil
	}
	if t.Kind() != reflect.Struct {
		return nil // a type mismatch; json.Unmarshal reports it
	}
	fields := jsonFields(t)
	for k, e := range obj {
		ft, ok := fields[k]
		if !ok && serverOnlyKeys[k] {
			continue
		}
		if !ok {
			return core.ErrPayload(fmt.Sprintf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", k, path))
		}
		if err := checkKeys(e, ft, path+"."+k); err != nil {
			return err
		}
	}
	return nil
}

// jsonFields maps the JSON names of a struct's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// normalize applies GCP's handling of empty values: nulls, empty arrays and
// enums sent as "" are dropped; empty objects and plain "" strings are kept.
func normalize(m map[string]any) map[string]any {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case string:
			if x == "" && enumKeys[k] {
				delete(m, k)
			}
		case []any:
			if len(x) == 0 {
				delete(m, k)
				continue
			}
			for _, e := range x {
				if o, ok := e.(map[string]any); ok {
					normalize(o)
				}
			}
		case map[string]any:
			normalize(x)
		}
	}
	return m
}
