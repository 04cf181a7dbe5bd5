package networksecurity

import (
	"net/http"
	"net/netip"

	nsapi "google.golang.org/api/networksecurity/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// The item methods. Their operations have verb "update" (recorded for
// addItems and removeItems; chosen for cloneItems). Adding an item already
// present and removing one that is absent are accepted and change nothing
// for that item (chosen: GCP's answer is not recorded).

func (a *API) addGroupItems(w http.ResponseWriter, r *http.Request, method string) {
	var in nsapi.AddAddressGroupItemsRequest
	if _, err := core.Decode(w, r, a.host.MaxBodyBytes(), &in, "add_address_group_items_request"); err != nil {
		core.WriteRPC(w, err)
		return
	}
	if len(in.Items) == 0 {
		core.WriteRPC(w, core.ErrRPCInvalid("Field 'items' is required."))
		return
	}
	t := targetOf(r)
	op, err := a.mutate(a.mutation(method, t, "update", in.RequestId), func(cur *AddressGroup) (*AddressGroup, error) {
		if cur == nil {
			return nil, core.ErrRPCNotFound(t.path())
		}
		return cur, addItems(cur, in.Items)
	})
	a.finish(w, r, method, op, err)
}

// addItems appends the items cur lacks, within its capacity.
func addItems(cur *AddressGroup, items []string) error {
	all, err := checkItems(cur.Type, items, cur.Items)
	if err != nil {
		return err
	}
	if len(all) > int(cur.Capacity) {
		return errCapacity(len(all), cur.Capacity)
	}
	cur.Items = all
	return nil
}

func (a *API) removeGroupItems(w http.ResponseWriter, r *http.Request, method string) {
	var in nsapi.RemoveAddressGroupItemsRequest
	if _, err := core.Decode(w, r, a.host.MaxBodyBytes(), &in, "remove_address_group_items_request"); err != nil {
		core.WriteRPC(w, err)
		return
	}
	if len(in.Items) == 0 {
		core.WriteRPC(w, core.ErrRPCInvalid("Field 'items' is required."))
		return
	}
	gone := map[netip.Prefix]bool{}
	for _, item := range in.Items {
		k, err := itemKey(item)
		if err != nil {
			core.WriteRPC(w, err)
			return
		}
		gone[k] = true
	}
	t := targetOf(r)
	op, err := a.mutate(a.mutation(method, t, "update", in.RequestId), func(cur *AddressGroup) (*AddressGroup, error) {
		if cur == nil {
			return nil, core.ErrRPCNotFound(t.path())
		}
		kept := cur.Items[:0]
		for _, item := range cur.Items {
			if k, err := itemKey(item); err != nil || !gone[k] {
				kept = append(kept, item)
			}
		}
		cur.Items = kept
		return cur, nil
	})
	a.finish(w, r, method, op, err)
}

// cloneGroupItems adds the items of another group of the same type ("Clones
// items from one address group to another"; adding rather than replacing
// is chosen).
func (a *API) cloneGroupItems(w http.ResponseWriter, r *http.Request, method string) {
	var in nsapi.CloneAddressGroupItemsRequest
	if _, err := core.Decode(w, r, a.host.MaxBodyBytes(), &in, "clone_address_group_items_request"); err != nil {
		core.WriteRPC(w, err)
		return
	}
	if !groupNamePattern.MatchString(in.SourceAddressGroup) {
		core.WriteRPC(w, core.ErrRPCInvalid("Invalid source_address_group '%s': want projects|organizations/*/locations/*/addressGroups/*.", in.SourceAddressGroup))
		return
	}
	t := targetOf(r)
	op, err := a.mutate(a.mutation(method, t, "update", in.RequestId), func(cur *AddressGroup) (*AddressGroup, error) {
		if cur == nil {
			return nil, core.ErrRPCNotFound(t.path())
		}
		src := a.state.byPath[in.SourceAddressGroup] // under the host's lock
		if src == nil {
			return nil, core.ErrRPCNotFound(in.SourceAddressGroup)
		}
		if src.Type != cur.Type {
			return nil, core.ErrRPCInvalid("Address group '%s' is of type %s; '%s' is of type %s.",
				in.SourceAddressGroup, src.Type, t.path(), cur.Type)
		}
		return cur, addItems(cur, src.Items)
	})
	a.finish(w, r, method, op, err)
}

// references is Host.ReferencesLocked for callers outside the lock.
func (a *API) references(parent, location, name string) []Reference {
	a.host.Lock()
	defer a.host.Unlock()
	return a.host.ReferencesLocked(parent, location, name)
}

// listGroupReferences lists the security policy rules that use the group
// (see Host.ReferencesLocked). The policy is named by its selfLink (chosen: no
// recorded answer shows the form).
func (a *API) listGroupReferences(w http.ResponseWriter, r *http.Request, _ string) {
	t := targetOf(r)
	if _, err := a.group(t.path()); err != nil {
		core.WriteRPC(w, err)
		return
	}
	writePage(w, r, "addressGroupReferences", a.references(t.parent, t.location, t.name), func(ref Reference) any {
		return map[string]any{"securityPolicy": ref.Policy, "rulePriority": ref.Priority}
	})
}
