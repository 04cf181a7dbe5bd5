package instances

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

const maxResultsLimit = 500

// window reads maxResults (0..500, 500 when 0 or unset) and pageToken (the
// offset of the page's first item, chosen: GCP's tokens are opaque).
func window(r *http.Request, total int) (start, end int, err error) {
	q := r.URL.Query()
	size := maxResultsLimit
	if v := q.Get("maxResults"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > maxResultsLimit {
			return 0, 0, core.ErrInvalidField("maxResults", v, "Must be between 0 and 500.")
		}
		if n > 0 {
			size = n
		}
	}
	if v := q.Get("pageToken"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > total {
			return 0, 0, core.ErrInvalidField("pageToken", v, "The page token is invalid.")
		}
		start = n
	}
	return start, min(start+size, total), nil
}

// matching renders the instances of project (in zone, if not "") that
// the request's filter selects, in GCP's order.
func (a *API) matching(r *http.Request, project, zone string) ([]map[string]any, error) {
	f, err := parseFilter(r.URL.Query().Get("filter"))
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	var in []*instance
	for _, i := range a.instances {
		if i.Project == project && (zone == "" || i.Zone == zone) {
			in = append(in, i)
		}
	}
	now := a.host.Now()
	var out []map[string]any
	for _, i := range sorted(in) {
		if m := i.render(now); f.matches(m) {
			out = append(out, m)
		}
	}
	a.mu.Unlock()
	return out, nil
}

// list answers instances.list for one zone.
func (a *API) list(w http.ResponseWriter, r *http.Request) {
	if err := zoneOf(r); err != nil {
		core.WriteError(w, err)
		return
	}
	project, zone := r.PathValue("project"), r.PathValue("zone")
	all, err := a.matching(r, project, zone)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	start, end, err := window(r, len(all))
	if err != nil {
		core.WriteError(w, err)
		return
	}
	id := "projects/" + project + "/zones/" + zone + "/instances"
	body := map[string]any{"kind": "compute#instanceList", "id": id, "selfLink": core.ComputeRoot + id}
	if end > start {
		body["items"] = all[start:end] // compute omits items when there are none
	}
	if end < len(all) {
		body["nextPageToken"] = strconv.Itoa(end)
	}
	core.WriteJSON(w, http.StatusOK, body)
}

func (a *API) unreachableZones() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for z := range a.unreachable {
		out = append(out, z)
	}
	slices.Sort(out)
	return out
}

// aggregatedList answers instances.aggregatedList: every zone of the
// project under "zones/<zone>", the page's instances of it or, when it has
// none on this page, the NO_RESULTS_ON_PAGE warning, as GCP answers.
// maxResults counts instances, not zones.
func (a *API) aggregatedList(w http.ResponseWriter, r *http.Request) {
	project := r.PathValue("project")
	unreachable := a.unreachableZones()
	if len(unreachable) > 0 && r.URL.Query().Get("returnPartialSuccess") != "true" {
		core.WriteError(w, core.ErrInjected(503, 0))
		return
	}
	all, err := a.matching(r, project, "")
	if err != nil {
		core.WriteError(w, err)
		return
	}
	all = slices.DeleteFunc(all, func(m map[string]any) bool { return slices.Contains(unreachable, lastSegment(m["zone"].(string))) })
	start, end, err := window(r, len(all))
	if err != nil {
		core.WriteError(w, err)
		return
	}
	byZone := map[string][]any{}
	for _, m := range all[start:end] {
		z := "zones/" + lastSegment(m["zone"].(string))
		byZone[z] = append(byZone[z], m)
	}
	items := make(map[string]any, len(zones))
	var unreachables []string
	for _, z := range zones {
		k := "zones/" + z
		if slices.Contains(unreachable, z) {
			unreachables = append(unreachables, k)
			continue
		}
		if list := byZone[k]; len(list) > 0 {
			items[k] = map[string]any{"instances": list}
			continue
		}
		items[k] = map[string]any{"warning": map[string]any{
			"code":    "NO_RESULTS_ON_PAGE",
			"message": fmt.Sprintf("There are no results for scope '%s' on this page.", k),
			"data":    []any{map[string]any{"key": "scope", "value": k}},
		}}
	}
	id := "projects/" + project + "/aggregated/instances"
	body := map[string]any{"kind": "compute#instanceAggregatedList", "id": id, "items": items, "selfLink": core.ComputeRoot + id}
	if end < len(all) {
		body["nextPageToken"] = strconv.Itoa(end)
	}
	if len(unreachables) > 0 {
		body["unreachables"] = unreachables
	}
	core.WriteJSON(w, http.StatusOK, body)
}
