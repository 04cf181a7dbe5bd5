package emulator

import (
	"fmt"
	"net/http"
	"regexp"
	"strconv"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

const maxResultsLimit = 500

// A page is a list response body with items and nextPageToken filled in.
type page struct {
	body map[string]any
}

// paginate applies filter, maxResults and pageToken. The page token is the
// offset of the next item (chosen: GCP's tokens are opaque).
func paginate(r *http.Request, items []map[string]any) (page, error) {
	q := r.URL.Query()
	items, err := filterItems(q.Get("filter"), items)
	if err != nil {
		return page{}, err
	}
	max := maxResultsLimit
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxResultsLimit {
			return page{}, core.ErrInvalidField("maxResults", v, "Must be between 0 and 500.")
		}
		if n > 0 {
			max = n
		}
	}
	start := 0
	if v := q.Get("pageToken"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > len(items) {
			return page{}, core.ErrInvalidField("pageToken", v, "The page token is invalid.")
		}
		start = n
	}
	end := min(start+max, len(items))
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

// writeList answers a compute list call: the page of items the request's
// filter, maxResults and pageToken select, as a list of kind named id.
// withSelfLink adds the list's selfLink (apiRoot + id); the security policy
// lists are answered without one.
func writeList(w http.ResponseWriter, r *http.Request, items []map[string]any, kind, id string, withSelfLink bool) {
	page, err := paginate(r, items)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	page.body["kind"] = kind
	page.body["id"] = id
	if withSelfLink {
		page.body["selfLink"] = apiRoot + id
	}
	core.WriteJSON(w, http.StatusOK, page.body)
}

// filterExpr is the subset of compute's filter syntax the emulator supports:
// one comparison "field op value", op one of = != eq ne (eq/ne are RE2
// full-match regular expressions, as in compute).
var filterExpr = regexp.MustCompile(`^\s*\(?\s*([A-Za-z][A-Za-z0-9.]*)\s*(=|!=|\beq\b|\bne\b)\s*"?([^"()]*?)"?\s*\)?\s*$`)

func filterItems(filter string, items []map[string]any) ([]map[string]any, error) {
	if strings.TrimSpace(filter) == "" {
		return items, nil
	}
	m := filterExpr.FindStringSubmatch(filter)
	if m == nil {
		return nil, core.ErrInvalidField("filter", filter, "The emulator supports a single comparison: field (=|!=|eq|ne) value.")
	}
	field, op, want := m[1], m[2], m[3]
	match := func(got string) bool { return got == want }
	if op == "eq" || op == "ne" {
		re, err := regexp.Compile("^(?:" + want + ")$")
		if err != nil {
			return nil, core.ErrInvalidField("filter", filter, "Invalid regular expression.")
		}
		match = re.MatchString
	}
	negate := op == "!=" || op == "ne"
	var out []map[string]any
	for _, it := range items {
		if match(core.Lookup(it, field)) != negate {
			out = append(out, it)
		}
	}
	return out, nil
}

func (s *Server) listPolicies(w http.ResponseWriter, r *http.Request, c *call) {
	var items []map[string]any
	for _, p := range s.store.list(c.scope, false) {
		items = append(items, renderPolicy(p))
	}
	writeList(w, r, items, "compute#securityPolicyList", c.scope.base()+"/securityPolicies", false)
}

// aggregatedPolicies lists every scope of the project. Scopes are the global
// one plus every region holding a policy (chosen: GCP lists all regions); an
// empty scope carries the NO_RESULTS_ON_PAGE warning instead of a list.
func (s *Server) aggregatedPolicies(w http.ResponseWriter, r *http.Request, c *call) {
	byScope := map[string][]map[string]any{"global": nil}
	for _, p := range s.store.list(c.scope, true) {
		k := p.Scope.aggregatedKey()
		byScope[k] = append(byScope[k], renderPolicy(p))
	}
	items := map[string]any{}
	for k, ps := range byScope {
		ps, err := filterItems(r.URL.Query().Get("filter"), ps)
		if err != nil {
			core.WriteError(w, err)
			return
		}
		items[k] = scopedList(k, ps)
	}
	core.WriteJSON(w, http.StatusOK, map[string]any{
		"kind":     "compute#securityPolicyAggregatedList",
		"id":       "projects/" + c.scope.Project + "/aggregated/securityPolicies",
		"items":    items,
		"selfLink": apiRoot + "projects/" + c.scope.Project + "/aggregated/securityPolicies",
	})
}

func scopedList(key string, ps []map[string]any) map[string]any {
	if len(ps) == 0 {
		return map[string]any{"warning": map[string]any{
			"code":    "NO_RESULTS_ON_PAGE",
			"message": fmt.Sprintf("There are no results for scope '%s' on this page.", key),
			"data":    []any{map[string]any{"key": "scope", "value": key}},
		}}
	}
	list := make([]any, len(ps))
	for i, p := range ps {
		list[i] = p
	}
	return map[string]any{"securityPolicies": list}
}
