package networksecurity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/netip"
	"reflect"
	"regexp"
	"strconv"

	nsapi "google.golang.org/api/networksecurity/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

var (
	// "1-63 characters long, containing only letters, numbers, hyphens, and
	// underscores, and should not start with a number" (addressGroupId).
	groupIDPattern  = regexp.MustCompile(`^[A-Za-z_-][A-Za-z0-9_-]{0,62}$`)
	locationPattern = regexp.MustCompile(`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`)
	// The source of cloneItems: "projects|organization/*/locations/{location}/addressGroups/*".
	groupNamePattern = regexp.MustCompile(`^(projects|organizations)/[^/]+/locations/[^/]+/addressGroups/[^/]+$`)

	// Enum values by number, for "$alt=json;enum-encoding=int" (the KCC
	// recordings send and receive type 1 for IPV4, purpose 1 for DEFAULT).
	groupTypes    = []string{"TYPE_UNSPECIFIED", "IPV4", "IPV6"}
	groupPurposes = []string{"PURPOSE_UNSPECIFIED", "DEFAULT", "CLOUD_ARMOR"}
)

const (
	groupTypeEnum    = "type.googleapis.com/google.cloud.networksecurity.v1.AddressGroup.Type"
	groupPurposeEnum = "type.googleapis.com/google.cloud.networksecurity.v1.AddressGroup.Purpose"
)

// A groupBody is an AddressGroup as a request sent it; has tells which
// fields it carried.
type groupBody struct {
	has         map[string]bool
	Description string
	Labels      map[string]string
	Type        string
	Capacity    int64
	Items       []string
	Purpose     []string
}

// decodeGroupBody reads an AddressGroup. Unlike core.DecodeBody it accepts enums
// as names or numbers and int32 as a number or a string, as proto3 JSON
// does.
func decodeGroupBody(b []byte) (*groupBody, error) {
	if len(bytes.TrimSpace(b)) == 0 {
		b = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var obj map[string]any
	if err := dec.Decode(&obj); err != nil {
		return nil, core.ErrParse(core.SyntaxDetail(err))
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, core.ErrParse("Unexpected data after the JSON object.")
	}
	if err := core.CheckKeys(obj, reflect.TypeOf(nsapi.AddressGroup{}), "address_group"); err != nil {
		return nil, err
	}
	in := &groupBody{has: map[string]bool{}}
	var err error
	for k, v := range obj {
		if v == nil {
			continue
		}
		in.has[k] = true
		switch k {
		case "description":
			in.Description, err = stringValue(v, "address_group.description")
		case "type":
			in.Type, err = enumValue(v, groupTypes, groupTypeEnum, "address_group.type")
		case "capacity":
			in.Capacity, err = int32Value(v, "address_group.capacity")
		case "items":
			in.Items, err = stringList(v, "address_group.items", nil, "")
		case "purpose":
			in.Purpose, err = stringList(v, "address_group.purpose", groupPurposes, groupPurposeEnum)
		case "labels":
			in.Labels, err = stringMap(v, "address_group.labels")
		}
		if err != nil {
			return nil, err
		}
	}
	return in, nil
}

func badValue(field, typ string, v any) error {
	b, _ := json.Marshal(v)
	return core.ErrPayload(fmt.Sprintf("Invalid value at '%s' (%s), %s", field, typ, b))
}

func stringValue(v any, field string) (string, error) {
	s, ok := v.(string)
	if !ok {
		return "", badValue(field, "TYPE_STRING", v)
	}
	return s, nil
}

func int32Value(v any, field string) (int64, error) {
	var s string
	switch x := v.(type) {
	case json.Number:
		s = x.String()
	case string:
		s = x
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, badValue(field, "TYPE_INT32", v)
	}
	return n, nil
}

// enumValue reads an enum sent as its name or its number.
func enumValue(v any, names []string, typ, field string) (string, error) {
	switch x := v.(type) {
	case string:
		for _, n := range names {
			if n == x {
				return x, nil
			}
		}
	case json.Number:
		if i, err := x.Int64(); err == nil && i >= 0 && int(i) < len(names) {
			return names[i], nil
		}
	}
	return "", badValue(field, typ, v)
}

// stringList reads a list of strings, or of enums when names is set.
func stringList(v any, field string, names []string, typ string) ([]string, error) {
	list, ok := v.([]any)
	if !ok {
		return nil, badValue(field, "TYPE_STRING", v)
	}
	out := make([]string, len(list))
	for i, e := range list {
		f := fmt.Sprintf("%s[%d]", field, i)
		var err error
		if names != nil {
			out[i], err = enumValue(e, names, typ, f)
		} else {
			out[i], err = stringValue(e, f)
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

func stringMap(v any, field string) (map[string]string, error) {
	m, ok := v.(map[string]any)
	if !ok {
		return nil, badValue(field, "TYPE_MESSAGE", v)
	}
	out := make(map[string]string, len(m))
	for k, e := range m {
		s, err := stringValue(e, field+"."+k)
		if err != nil {
			return nil, err
		}
		out[k] = s
	}
	return out, nil
}

// validateGroupFields checks what create and patch store: the type, the
// capacity, the items against both, the purposes and the labels. The
// wording of every message is the emulator's (none is recorded).
func validateGroupFields(g *AddressGroup) error {
	if g.Type != "IPV4" && g.Type != "IPV6" {
		return core.ErrRPCInvalid("Field 'type' is required: IPV4 or IPV6.")
	}
	if g.Capacity <= 0 {
		return core.ErrRPCInvalid("Field 'capacity' is required and must be greater than 0.")
	}
	items, err := checkItems(g.Type, g.Items, nil)
	if err != nil {
		return err
	}
	if len(items) > int(g.Capacity) {
		return errCapacity(len(items), g.Capacity)
	}
	g.Items = items
	for _, p := range g.Purpose {
		if p != "DEFAULT" && p != "CLOUD_ARMOR" {
			return core.ErrRPCInvalid("Field 'purpose' must list DEFAULT or CLOUD_ARMOR, not %s.", p)
		}
	}
	if err := core.ValidateLabels(g.Labels); err != nil {
		return core.RPCFrom(err)
	}
	return nil
}

func errCapacity(n int, capacity int64) *core.RPCError {
	return core.ErrRPCInvalid("The address group would hold %d items; its capacity is %d.", n, capacity)
}

// itemKey parses an item, an IP address or a CIDR range, and returns it as
// a prefix (an address is its /32 or /128), for comparing items. The item
// itself is stored as sent.
func itemKey(item string) (netip.Prefix, error) {
	if p, err := netip.ParsePrefix(item); err == nil {
		return p, nil
	}
	a, err := netip.ParseAddr(item)
	if err != nil || a.Zone() != "" {
		return netip.Prefix{}, core.ErrRPCInvalid("Invalid item '%s': an item is an IPv4 or IPv6 address or CIDR range.", item)
	}
	return netip.PrefixFrom(a, a.BitLen()), nil
}

// checkItems validates items for a group of type typ and returns have
// followed by the items not already in it, in order: an item already
// present, or sent twice, is added once (chosen: GCP's answer to a
// duplicate is not recorded).
func checkItems(typ string, items, have []string) ([]string, error) {
	seen := map[netip.Prefix]bool{}
	for _, h := range have {
		if k, err := itemKey(h); err == nil {
			seen[k] = true
		}
	}
	out := append([]string(nil), have...)
	for _, item := range items {
		k, err := itemKey(item)
		if err != nil {
			return nil, err
		}
		if v6 := !k.Addr().Is4(); v6 != (typ == "IPV6") {
			return nil, core.ErrRPCInvalid("Item '%s' is not an %s address or range; the address group's type is %s.",
				item, map[bool]string{true: "IPv6", false: "IPv4"}[typ == "IPV6"], typ)
		}
		if !seen[k] {
			seen[k] = true
			out = append(out, item)
		}
	}
	return out, nil
}
