package routers

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

const maxResultsLimit = 500

// rendered renders the routers of project (in region, if not ""), by
// region then name: GCP's order.
func (a *API) rendered(project, region string) []map[string]any {
	a.host.Lock()
	defer a.host.Unlock()
	var in []*router
	for _, rt := range a.routers {
		if rt.Scope.Project == project && (region == "" || rt.Scope.Region == region) {
			in = append(in, rt)
		}
	}
	slices.SortFunc(in, func(x, y *router) int {
		return strings.Compare(x.Scope.Region+"/"+x.Name, y.Scope.Region+"/"+y.Name)
	})
	out := make([]map[string]any, len(in))
	for i, rt := range in {
		out[i] = rt.render()
	}
	return out
}

// list answers routers.list for one region.
func (a *API) list(w http.ResponseWriter, r *http.Request, c Call) {
	if err := regionOf(c.Scope()); err != nil {
		core.WriteError(w, err)
		return
	}
	items := a.rendered(c.Scope().Project, c.Scope().Region)
	core.WriteList(w, r, items, "compute#routerList", c.Scope().Base()+"/routers", true)
}

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

// aggregatedList answers routers.aggregatedList: every region of the
// project under "regions/<region>", the page's routers of it or, when it
// has none on this page, the NO_RESULTS_ON_PAGE warning, as GCP answers.
// maxResults counts routers, not regions.
func (a *API) aggregatedList(w http.ResponseWriter, r *http.Request, c Call) {
	project := c.Scope().Project
	all, err := core.FilterItems(r.URL.Query().Get("filter"), a.rendered(project, ""))
	if err != nil {
		core.WriteError(w, err)
		return
	}
	start, end, err := window(r, len(all))
	if err != nil {
		core.WriteError(w, err)
		return
	}
	byRegion := map[string][]any{}
	for _, m := range all[start:end] {
		k := "regions/" + lastSegment(m["region"].(string))
		byRegion[k] = append(byRegion[k], m)
	}
	items := make(map[string]any, len(core.RegionNames))
	for _, region := range core.RegionNames {
		k := "regions/" + region
		if list := byRegion[k]; len(list) > 0 {
			items[k] = map[string]any{"routers": list}
			continue
		}
		items[k] = map[string]any{"warning": map[string]any{
			"code":    "NO_RESULTS_ON_PAGE",
			"message": fmt.Sprintf("There are no results for scope '%s' on this page.", k),
			"data":    []any{map[string]any{"key": "scope", "value": k}},
		}}
	}
	id := "projects/" + project + "/aggregated/routers"
	body := map[string]any{"kind": "compute#routerAggregatedList", "id": id, "items": items, "selfLink": core.ComputeRoot + id}
	if end < len(all) {
		body["nextPageToken"] = strconv.Itoa(end)
	}
	core.WriteJSON(w, http.StatusOK, body)
}

func lastSegment(url string) string { return url[strings.LastIndex(url, "/")+1:] }
