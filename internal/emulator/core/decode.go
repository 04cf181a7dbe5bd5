package core

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strings"
)

// ServerOnlyKeys are fields real GCP returns that the v1 Go structs lack; a
// client that echoes a GET response back may send them, and GCP accepts that.
var ServerOnlyKeys = map[string]bool{"ruleNumber": true, "selfLinkWithId": true}

// DecodeBody parses a JSON object into typed (a pointer to a compute struct,
// used for validation) and returns the raw object (numbers kept verbatim,
// used for storage and echoing). what names the message in errors, like the
// Google front end does ("security_policy").
func DecodeBody(b []byte, typed any, what string) (map[string]any, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var raw any
	if err := dec.Decode(&raw); err != nil {
		return nil, ErrParse(SyntaxDetail(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrParse("Unexpected data after the JSON object.")
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, ErrPayload(fmt.Sprintf("Invalid JSON payload received. Expected an object for '%s'.", what))
	}
	if err := CheckKeys(obj, reflect.TypeOf(typed), what); err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, typed); err != nil {
		return nil, TypeError(err, what)
	}
	return obj, nil
}

func SyntaxDetail(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%s at offset %d.", se.Error(), se.Offset)
	}
	return "Unexpected end of input."
}

func TypeError(err error, what string) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return ErrPayload(fmt.Sprintf("Invalid value at '%s.%s' (%s), %s", what, te.Field, te.Type, te.Value))
	}
	return ErrPayload("Invalid JSON payload received. " + err.Error())
}

// CheckKeys rejects names the schema does not have. It is exact about case,
// unlike encoding/json, because GCP is.
func CheckKeys(v any, t reflect.Type, path string) error {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	switch x := v.(type) {
	case []any:
		for i, e := range x {
			if err := CheckKeys(e, t, fmt.Sprintf("%s[%d]", path, i)); err != nil {
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
			if err := CheckKeys(e, t.Elem(), path+"."+k); err != nil {
				return err
			}
		}
		return nil
	}
	if t.Kind() != reflect.Struct {
		return nil // a type mismatch; json.Unmarshal reports it
	}
	fields := JSONFields(t)
	for k, e := range obj {
		ft, ok := fields[k]
		if !ok && ServerOnlyKeys[k] {
			continue
		}
		if !ok {
			return ErrPayload(fmt.Sprintf("Invalid JSON payload received. Unknown name %q at '%s': Cannot find field.", k, path))
		}
		if err := CheckKeys(e, ft, path+"."+k); err != nil {
			return err
		}
	}
	return nil
}

// JSONFields maps the JSON names of a struct's fields to their types.
func JSONFields(t reflect.Type) map[string]reflect.Type {
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

// Decode reads a request body of at most max bytes and decodes it as
// DecodeBody does.
func Decode(w http.ResponseWriter, r *http.Request, max int64, typed any, what string) (map[string]any, error) {
	b, err := ReadBody(w, r, max)
	if err != nil {
		return nil, err
	}
	return DecodeBody(b, typed, what)
}
