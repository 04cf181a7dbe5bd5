package core

import (
	"fmt"
	"maps"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
)

// What every compute API (security policies, backend and edge services)
// shares: where an object lives, its JSON, its timestamps, lists and the
// checks of a new object's name and region.

// A Scope is where a compute object or operation lives: global (Region "")
// or a region.
type Scope struct {
	Project string `json:"project"`
	Region  string `json:"region,omitempty"`
}

// Base is "projects/p/global" or "projects/p/regions/r".
func (s Scope) Base() string {
	if s.Region == "" {
		return "projects/" + s.Project + "/global"
	}
	return "projects/" + s.Project + "/regions/" + s.Region
}

func (s Scope) PolicyPath(name string) string { return s.Base() + "/securityPolicies/" + name }
func (s Scope) OpPath(name string) string     { return s.Base() + "/operations/" + name }

// RegionURL is the full URL GCP reports in a regional resource's region field.
func (s Scope) RegionURL() string {
	return ComputeRoot + "projects/" + s.Project + "/regions/" + s.Region
}

// AggregatedKey is the key of this scope in aggregatedList responses.
func (s Scope) AggregatedKey() string {
	if s.Region == "" {
		return "global"
	}
	return "regions/" + s.Region
}

// ObjectPath is the path of a named compute object of the scope, e.g.
// projects/P/global/backendServices/N.
func (s Scope) ObjectPath(collection, name string) string {
	return s.Base() + "/" + collection + "/" + name
}

// RegionalResource is what a 403 of a request on a regional compute
// collection names: the object the path parameter param names, else the
// region, else the project.
func RegionalResource(r *http.Request, collection, param string) string {
	sc := Scope{Project: r.PathValue("project"), Region: r.PathValue("region")}
	switch {
	case r.PathValue(param) != "":
		return sc.ObjectPath(collection, r.PathValue(param))
	case sc.Region != "":
		return "projects/" + sc.Project + "/regions/" + sc.Region
	}
	return "projects/" + sc.Project
}

// RegionalObjects returns the objects of all in project (in region, if not
// ""), by region then name: GCP's list order. where gives an object's scope
// and name.
func RegionalObjects[T any](all map[string]T, where func(T) (Scope, string), project, region string) []T {
	type placed struct {
		key string
		obj T
	}
	var in []placed
	for _, o := range all {
		sc, name := where(o)
		if sc.Project == project && (region == "" || sc.Region == region) {
			in = append(in, placed{sc.Region + "/" + name, o})
		}
	}
	slices.SortFunc(in, func(x, y placed) int { return strings.Compare(x.key, y.key) })
	out := make([]T, len(in))
	for i, p := range in {
		out[i] = p.obj
	}
	return out
}

// CloneMap deep-copies decoded JSON.
func CloneMap(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	c := make(map[string]any, len(m))
	for k, v := range m {
		c[k] = CloneValue(v)
	}
	return c
}

// CloneValue deep-copies a decoded JSON value.
func CloneValue(v any) any {
	switch t := v.(type) {
	case map[string]any:
		return CloneMap(t)
	case []any:
		c := make([]any, len(t))
		for i, e := range t {
			c[i] = CloneValue(e)
		}
		return c
	default:
		return v
	}
}

// pacific is the zone GCP timestamps are written in.
var pacific = func() *time.Location {
	if l, err := time.LoadLocation("America/Los_Angeles"); err == nil {
		return l
	}
	return time.FixedZone("PST", -8*3600)
}()

// Timestamp formats like "2023-02-10T13:23:43.497-08:00".
func Timestamp(t time.Time) string {
	return t.In(pacific).Format("2006-01-02T15:04:05.000-07:00")
}

// enumKeys are the JSON names of enum-typed fields in the SecurityPolicy
// schema tree (taken from the compute v1 discovery document). GCP drops an
// enum sent as "" but keeps a plain string sent as "" (R6, reference §a.4).
var enumKeys = map[string]bool{
	"base": true, "ddosAdaptiveProtection": true, "ddosProtection": true,
	"enforceOnKey": true, "enforceOnKeyType": true, "jsonParsing": true,
	"logLevel": true, "op": true, "ruleVisibility": true, "type": true,
	"versionedExpr": true,
}

// Normalize applies GCP's handling of empty values: nulls, empty arrays and
// enums sent as "" are dropped; empty objects and plain "" strings are kept.
func Normalize(m map[string]any) map[string]any {
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
					Normalize(o)
				}
			}
		case map[string]any:
			Normalize(x)
		}
	}
	return m
}

const maxResultsLimit = 500

// A page is a list response body with items and nextPageToken filled in.
type page struct {
	body map[string]any
}

// paginate applies filter, maxResults and pageToken (see Window).
func paginate(r *http.Request, items []map[string]any) (page, error) {
	items, err := FilterItems(r.URL.Query().Get("filter"), items)
	if err != nil {
		return page{}, err
	}
	start, end, err := Window(r, len(items))
	if err != nil {
		return page{}, err
	}
	body := map[string]any{}
	if end > start {
		list := make([]any, 0, end-start)
		for _, it := range items[start:end] {
			list = append(list, it)
		}
		body["items"] = list // compute omits items when there are none
	}
	if end < len(items) {
		body["nextPageToken"] = strconv.Itoa(end)
	}
	return page{body: body}, nil
}

// Window reads a list request's maxResults (0..500, 500 when 0 or unset)
// and pageToken, and returns the page [start, end) of total items. The
// page token is the offset of the page's first item (chosen: GCP's tokens
// are opaque).
func Window(r *http.Request, total int) (start, end int, err error) {
	q := r.URL.Query()
	size := maxResultsLimit
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxResultsLimit {
			return 0, 0, ErrInvalidField("maxResults", v, "Must be between 0 and 500.")
		}
		if n > 0 {
			size = n
		}
	}
	if v := q.Get("pageToken"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > total {
			return 0, 0, ErrInvalidField("pageToken", v, "The page token is invalid.")
		}
		start = n
	}
	return start, min(start+size, total), nil
}

// WriteList answers a compute list call: the page of items the request's
// filter, maxResults and pageToken select, as a list of kind named id.
// withSelfLink adds the list's selfLink (ComputeRoot + id); the security policy
// lists are answered without one.
func WriteList(w http.ResponseWriter, r *http.Request, items []map[string]any, kind, id string, withSelfLink bool) {
	page, err := paginate(r, items)
	if err != nil {
		WriteError(w, err)
		return
	}
	page.body["kind"] = kind
	page.body["id"] = id
	if withSelfLink {
		page.body["selfLink"] = ComputeRoot + id
	}
	WriteJSON(w, http.StatusOK, page.body)
}

// filterExpr is the subset of compute's filter syntax the emulator supports:
// one comparison "field op value", op one of = != eq ne (eq/ne are RE2
// full-match regular expressions, as in compute).
var filterExpr = regexp.MustCompile(`^\s*\(?\s*([A-Za-z][A-Za-z0-9.]*)\s*(=|!=|\beq\b|\bne\b)\s*"?([^"()]*?)"?\s*\)?\s*$`)

// FilterItems keeps the items a compute filter= selects (see filterExpr).
func FilterItems(filter string, items []map[string]any) ([]map[string]any, error) {
	if strings.TrimSpace(filter) == "" {
		return items, nil
	}
	m := filterExpr.FindStringSubmatch(filter)
	if m == nil {
		return nil, ErrInvalidField("filter", filter, "The emulator supports a single comparison: field (=|!=|eq|ne) value.")
	}
	field, op, want := m[1], m[2], m[3]
	match := func(got string) bool { return got == want }
	if op == "eq" || op == "ne" {
		re, err := regexp.Compile("^(?:" + want + ")$")
		if err != nil {
			return nil, ErrInvalidField("filter", filter, "Invalid regular expression.")
		}
		match = re.MatchString
	}
	negate := op == "!=" || op == "ne"
	var out []map[string]any
	for _, it := range items {
		if match(Lookup(it, field)) != negate {
			out = append(out, it)
		}
	}
	return out, nil
}

// WriteAggregated answers a compute aggregatedList of a project's objects
// of collection, byScope (by AggregatedKey): the global scope (if global is
// true) plus every scope holding an object, each the objects filter=
// selects as a list under key, or the NO_RESULTS_ON_PAGE warning.
func WriteAggregated(w http.ResponseWriter, r *http.Request, project, kind, collection, key string, global bool,
	byScope map[string][]map[string]any) {
	if global {
		if _, ok := byScope["global"]; !ok {
			byScope["global"] = nil
		}
	}
	items := map[string]any{}
	for k, objs := range byScope {
		objs, err := FilterItems(r.URL.Query().Get("filter"), objs)
		if err != nil {
			WriteError(w, err)
			return
		}
		if len(objs) == 0 {
			items[k] = noResults(k)
			continue
		}
		list := make([]any, len(objs))
		for i, o := range objs {
			list[i] = o
		}
		items[k] = map[string]any{key: list}
	}
	path := "projects/" + project + "/aggregated/" + collection
	WriteJSON(w, http.StatusOK, map[string]any{"kind": kind, "id": path, "items": items, "selfLink": ComputeRoot + path})
}

// WriteRegionalAggregated answers the aggregatedList of a regional
// collection: every region of the project under "regions/R" (and
// "global" too when global is set, for a collection that also has global
// objects), the page's objects of it or, when it has none on this page,
// the NO_RESULTS_ON_PAGE warning, as GCP answers. filter= applies first;
// maxResults counts objects, not scopes. items must be in GCP's order
// (region, then name) and carry their region's URL in "region".
func WriteRegionalAggregated(w http.ResponseWriter, r *http.Request, project, kind, collection, key string, global bool,
	items []map[string]any) {
	all, err := FilterItems(r.URL.Query().Get("filter"), items)
	if err != nil {
		WriteError(w, err)
		return
	}
	start, end, err := Window(r, len(all))
	if err != nil {
		WriteError(w, err)
		return
	}
	byScope := map[string][]any{}
	for _, m := range all[start:end] {
		region, _ := m["region"].(string)
		k := "regions/" + region[strings.LastIndex(region, "/")+1:]
		byScope[k] = append(byScope[k], m)
	}
	scopes := make([]string, 0, len(RegionNames)+1)
	if global {
		scopes = append(scopes, "global")
	}
	for _, region := range RegionNames {
		scopes = append(scopes, "regions/"+region)
	}
	out := make(map[string]any, len(scopes))
	for _, k := range scopes {
		if list := byScope[k]; len(list) > 0 {
			out[k] = map[string]any{key: list}
		} else {
			out[k] = noResults(k)
		}
	}
	id := "projects/" + project + "/aggregated/" + collection
	body := map[string]any{"kind": kind, "id": id, "items": out, "selfLink": ComputeRoot + id}
	if end < len(all) {
		body["nextPageToken"] = strconv.Itoa(end)
	}
	WriteJSON(w, http.StatusOK, body)
}

// noResults is an empty scope of an aggregated list.
func noResults(key string) map[string]any {
	return map[string]any{"warning": map[string]any{
		"code":    "NO_RESULTS_ON_PAGE",
		"message": fmt.Sprintf("There are no results for scope '%s' on this page.", key),
		"data":    []any{map[string]any{"key": "scope", "value": key}},
	}}
}

// Set is an enumeration, or any set of strings.
func Set(vs ...string) map[string]bool {
	m := make(map[string]bool, len(vs))
	for _, v := range vs {
		m[v] = true
	}
	return m
}

// Keys lists an enumeration as compute's messages do: "[A, B]", sorted.
func Keys(m map[string]bool) string {
	return "[" + strings.Join(slices.Sorted(maps.Keys(m)), ", ") + "]"
}

// CheckEnum refuses a value outside an enumeration; "" is absent (GCP drops
// an enum sent as "").
func CheckEnum(field, v string, allowed map[string]bool) error {
	if v != "" && !allowed[v] {
		return ErrInvalidField(field, v, "Must be one of "+Keys(allowed)+".")
	}
	return nil
}

// NamePattern is a compute resource name.
var NamePattern = regexp.MustCompile(`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`)

// ValidateName checks a name against the API's pattern.
func ValidateName(name string) error {
	if !NamePattern.MatchString(name) {
		return ErrInvalidField("resource.name", name,
			"Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
	}
	return nil
}

// CheckNew checks the name and the region of an insert body, whose
// request is for scope sc.
func CheckNew(sc Scope, name, region string) error {
	if err := ValidateName(name); err != nil {
		return err
	}
	return CheckRegion(sc, region)
}

// CheckRegion accepts a body region that names the path's region (as a
// short name or URL); R3 sent "us-central1" on insert and PATCH.
func CheckRegion(sc Scope, region string) error {
	if region == "" {
		return nil
	}
	short := region[strings.LastIndex(region, "/")+1:]
	if sc.Region == "" || short != sc.Region {
		return ErrInvalidField("resource.region", region, "The region must match the region in the request URL.")
	}
	return nil
}

// ErrFingerprint is compute's refusal of a stale fingerprint.
func ErrFingerprint() *Error {
	return &Error{Code: 412, Reason: "conditionNotMet",
		Message: "Supplied fingerprint does not match current metadata fingerprint."}
}
