package emulator

import (
	"net/http"
	"net/netip"

	networksecurity "google.golang.org/api/networksecurity/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// The item methods. Their operations have verb "update" (recorded for
// addItems and removeItems; chosen for cloneItems). Adding an item already
// present and removing one that is absent are accepted and change nothing
// for that item (chosen: GCP's answer is not recorded).

func (s *Server) addGroupItems(w http.ResponseWriter, r *http.Request, c *call) {
	var in networksecurity.AddAddressGroupItemsRequest
	if _, err := s.decode(w, r, &in, "add_address_group_items_request"); err != nil {
		core.WriteRPC(w, err)
		return
	}
	if len(in.Items) == 0 {
		core.WriteRPC(w, core.ErrRPCInvalid("Field 'items' is required."))
		return
	}
	t := targetOf(r)
	op, err := s.store.mutateGroup(s.groupMutation(c, t, "update", in.RequestId), func(cur *addressGroup) (*addressGroup, error) {
		if cur == nil {
			return nil, core.ErrRPCNotFound(t.path())
		}
		return cur, addItems(cur, in.Items)
	})
	s.finishGroup(w, r, c, op, err)
}

// addItems appends the items cur lacks, within its capacity.
func addItems(cur *addressGroup, items []string) error {
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

func (s *Server) removeGroupItems(w http.ResponseWriter, r *http.Request, c *call) {
	var in networksecurity.RemoveAddressGroupItemsRequest
	if _, err := s.decode(w, r, &in, "remove_address_group_items_request"); err != nil {
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
	op, err := s.store.mutateGroup(s.groupMutation(c, t, "update", in.RequestId), func(cur *addressGroup) (*addressGroup, error) {
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
	s.finishGroup(w, r, c, op, err)
}

// cloneGroupItems adds the items of another group of the same type ("Clones
// items from one address group to another"; adding rather than replacing
// is chosen).
func (s *Server) cloneGroupItems(w http.ResponseWriter, r *http.Request, c *call) {
	var in networksecurity.CloneAddressGroupItemsRequest
	if _, err := s.decode(w, r, &in, "clone_address_group_items_request"); err != nil {
		core.WriteRPC(w, err)
		return
	}
	if !groupNamePattern.MatchString(in.SourceAddressGroup) {
		core.WriteRPC(w, core.ErrRPCInvalid("Invalid source_address_group '%s': want projects|organizations/*/locations/*/addressGroups/*.", in.SourceAddressGroup))
		return
	}
	t := targetOf(r)
	op, err := s.store.mutateGroup(s.groupMutation(c, t, "update", in.RequestId), func(cur *addressGroup) (*addressGroup, error) {
		if cur == nil {
			return nil, core.ErrRPCNotFound(t.path())
		}
		src := s.store.groups.byPath[in.SourceAddressGroup] // under store.mu
		if src == nil {
			return nil, core.ErrRPCNotFound(in.SourceAddressGroup)
		}
		if src.Type != cur.Type {
			return nil, core.ErrRPCInvalid("Address group '%s' is of type %s; '%s' is of type %s.",
				in.SourceAddressGroup, src.Type, t.path(), cur.Type)
		}
		return cur, addItems(cur, src.Items)
	})
	s.finishGroup(w, r, c, op, err)
}

// listGroupReferences lists the security policy rules that use the group
// (see groupRefsLocked). The policy is named by its selfLink (chosen: no
// recorded answer shows the form).
func (s *Server) listGroupReferences(w http.ResponseWriter, r *http.Request, _ *call) {
	t := targetOf(r)
	if _, err := s.store.group(t.path()); err != nil {
		core.WriteRPC(w, err)
		return
	}
	refs := s.store.groupRefs(t.parent, t.location, t.name)
	start, end, next, err := pageBounds(r, len(refs))
	if err != nil {
		core.WriteRPC(w, err)
		return
	}
	body := map[string]any{}
	if end > start {
		list := make([]any, 0, end-start)
		for _, ref := range refs[start:end] {
			list = append(list, map[string]any{"securityPolicy": ref.Policy, "rulePriority": ref.Priority})
		}
		body["addressGroupReferences"] = list
	}
	if next != "" {
		body["nextPageToken"] = next
	}
	core.WriteJSON(w, http.StatusOK, body)
}
