package networksecurity

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// The address group CRUD methods. Their errors are google.rpc.Status JSON
// (core.WriteRPC). Recorded (KCC networksecurityaddressgroup-minimal, -maximal,
// addressgroup-basic, mockgcp addressgroup and orgaddressgroup crud): the
// 404 text, the operation shapes, PATCH following updateMask only, items
// kept as sent and in order, enums as numbers on request.

func (a *API) createGroup(w http.ResponseWriter, r *http.Request, method string) {
	t := targetOf(r)
	q := r.URL.Query()
	t.name = q.Get("addressGroupId")
	if err := checkGroupTarget(t); err != nil {
		core.WriteRPC(w, err)
		return
	}
	in, err := a.readBody(w, r)
	if err != nil {
		core.WriteRPC(w, err)
		return
	}
	g := &AddressGroup{Parent: t.parent, Location: t.location, Name: t.name, Description: in.Description,
		Labels: in.Labels, Type: in.Type, Capacity: in.Capacity, Items: in.Items, Purpose: in.Purpose}
	if err := validateGroupFields(g); err != nil {
		core.WriteRPC(w, err)
		return
	}
	m := a.mutation(method, t, "create", q.Get("requestId"))
	op, err := a.mutate(m, func(cur *AddressGroup) (*AddressGroup, error) {
		if cur != nil {
			return nil, core.ErrRPCAlreadyExists(t.path())
		}
		return g, nil
	})
	a.finish(w, r, method, op, err)
}

// checkGroupTarget checks the location and the addressGroupId of a create.
func checkGroupTarget(t target) error {
	if !locationPattern.MatchString(t.location) {
		return core.ErrRPCInvalid("Invalid location '%s'.", t.location)
	}
	if t.name == "" {
		return core.ErrRPCInvalid("Field 'address_group_id' is required.")
	}
	if !groupIDPattern.MatchString(t.name) {
		return core.ErrRPCInvalid("Invalid address_group_id '%s': 1-63 letters, digits, '-' or '_', not starting with a digit.", t.name)
	}
	return nil
}

func (a *API) readBody(w http.ResponseWriter, r *http.Request) (*groupBody, error) {
	b, err := core.ReadBody(w, r, a.host.MaxBodyBytes())
	if err != nil {
		return nil, err
	}
	return decodeGroupBody(b)
}

func (a *API) getGroup(w http.ResponseWriter, r *http.Request, _ string) {
	g, err := a.group(targetOf(r).path())
	if err != nil {
		core.WriteRPC(w, err)
		return
	}
	core.WriteJSON(w, http.StatusOK, renderGroup(g, intEnums(r)))
}

func (a *API) listGroups(w http.ResponseWriter, r *http.Request, _ string) {
	t := targetOf(r)
	writePage(w, r, "addressGroups", a.groupsIn(t.parent, t.location), func(g *AddressGroup) any {
		return renderGroup(g, intEnums(r))
	})
}

// writePage answers a list: the page of items pageSize and pageToken ask
// for, rendered, under key, and the next page's token.
func writePage[T any](w http.ResponseWriter, r *http.Request, key string, items []T, render func(T) any) {
	start, end, next, err := pageBounds(r, len(items))
	if err != nil {
		core.WriteRPC(w, err)
		return
	}
	body := map[string]any{}
	if end > start {
		list := make([]any, 0, end-start)
		for _, item := range items[start:end] {
			list = append(list, render(item))
		}
		body[key] = list
	}
	if next != "" {
		body["nextPageToken"] = next
	}
	core.WriteJSON(w, http.StatusOK, body)
}

// pageBounds applies pageSize and pageToken; the token is the offset of the
// next item (chosen: GCP's are opaque). pageSize 0 means all.
func pageBounds(r *http.Request, n int) (start, end int, next string, err error) {
	q := r.URL.Query()
	size := n
	if v := q.Get("pageSize"); v != "" {
		if size, err = strconv.Atoi(v); err != nil || size < 0 {
			return 0, 0, "", core.ErrRPCInvalid("Invalid page_size '%s'.", v)
		}
		if size == 0 {
			size = n
		}
	}
	if v := q.Get("pageToken"); v != "" {
		if start, err = strconv.Atoi(v); err != nil || start < 0 || start > n {
			return 0, 0, "", core.ErrRPCInvalid("Invalid page_token '%s'.", v)
		}
	}
	end = min(start+size, n)
	if end < n {
		next = strconv.Itoa(end)
	}
	return start, end, next, nil
}

// patchGroup applies the updateMask paths (camelCase or snake_case) from
// the body, and nothing else (recorded: updateMask=description leaves
// items the body changes alone). Without a mask every field is overwritten
// ("If the user does not provide a mask then all fields will be
// overwritten"), except capacity and type, which a body may leave out.
// Capacity and type cannot change (documented); naming them with another
// value is refused (wording chosen), naming them with the same one is not.
func (a *API) patchGroup(w http.ResponseWriter, r *http.Request, method string) {
	t := targetOf(r)
	in, err := a.readBody(w, r)
	if err != nil {
		core.WriteRPC(w, err)
		return
	}
	fields := maskFields(r.URL.Query().Get("updateMask"), in)
	m := a.mutation(method, t, "update", r.URL.Query().Get("requestId"))
	op, err := a.mutate(m, func(cur *AddressGroup) (*AddressGroup, error) {
		if cur == nil {
			return nil, core.ErrRPCNotFound(t.path())
		}
		if err := patchGroupFields(cur, in, fields); err != nil {
			return nil, err
		}
		return cur, validateGroupFields(cur)
	})
	a.finish(w, r, method, op, err)
}

// maskFields is the top-level fields a PATCH overwrites.
func maskFields(mask string, in *groupBody) []string {
	var out []string
	for _, path := range core.SplitMask(mask) {
		out = append(out, path[0])
	}
	if len(out) > 0 {
		return out
	}
	out = []string{"description", "labels", "items", "purpose"}
	for _, f := range []string{"capacity", "type"} {
		if in.has[f] {
			out = append(out, f)
		}
	}
	return out
}

func patchGroupFields(cur *AddressGroup, in *groupBody, fields []string) error {
	for _, f := range fields {
		switch f {
		case "description":
			cur.Description = in.Description
		case "labels":
			cur.Labels = in.Labels
		case "items":
			cur.Items = in.Items
		case "purpose":
			cur.Purpose = in.Purpose
		case "capacity":
			if in.Capacity != cur.Capacity {
				return core.ErrRPCInvalid("Field 'capacity' cannot be changed: it is fixed when the address group is created.")
			}
		case "type":
			if in.Type != cur.Type {
				return core.ErrRPCInvalid("Field 'type' cannot be changed: it is fixed when the address group is created.")
			}
		case "name", "createTime", "updateTime", "selfLink": // the path names it; output only
		default:
			return core.ErrRPCInvalid("Invalid update_mask path '%s'.", f)
		}
	}
	return nil
}

// deleteGroup refuses to delete a group that security policy rules use
// (documented; GCP's wording is not recorded, this one is chosen).
func (a *API) deleteGroup(w http.ResponseWriter, r *http.Request, method string) {
	t := targetOf(r)
	m := a.mutation(method, t, "delete", r.URL.Query().Get("requestId"))
	op, err := a.mutate(m, func(cur *AddressGroup) (*AddressGroup, error) {
		if cur == nil {
			return nil, core.ErrRPCNotFound(t.path())
		}
		if refs := a.host.ReferencesLocked(t.parent, t.location, t.name); len(refs) > 0 {
			return nil, errGroupInUse(t.path(), refs)
		}
		return nil, nil
	})
	a.finish(w, r, method, op, err)
}

func errGroupInUse(path string, refs []Reference) *core.RPCError {
	uses := make([]string, len(refs))
	for i, ref := range refs {
		uses[i] = fmt.Sprintf("%s (priority %d)", strings.TrimPrefix(ref.Policy, core.ComputeRoot), ref.Priority)
	}
	return core.ErrRPCPrecondition("Address group '%s' is used by security policy rules and cannot be deleted: %s.",
		path, strings.Join(uses, ", "))
}
