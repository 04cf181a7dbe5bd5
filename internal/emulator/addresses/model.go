package addresses

import (
	"strconv"
	"strings"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Address types and statuses, as compute names them.
const (
	external = "EXTERNAL"
	internal = "INTERNAL"
	reserved = "RESERVED"
	inUse    = "IN_USE"
	premium  = "PREMIUM"
)

// An address is one regional static address.
type address struct {
	Scope            core.Scope
	Name             string
	ID               uint64
	Created          time.Time
	Description      string
	IP               string
	Type             string // addressType
	Tier             string // networkTier; "" for an INTERNAL address sent without one
	Labels           map[string]string
	LabelFingerprint string
	// Extra are the fields the emulator keeps without modelling them
	// (purpose, subnetwork, ipVersion, ...), echoed as sent.
	Extra map[string]any
}

func addressPath(sc core.Scope, name string) string { return sc.ObjectPath("addresses", name) }

func (ad *address) path() string { return addressPath(ad.Scope, ad.Name) }

// render is the address as GET returns it; users are the full URLs of
// what uses it, which make it IN_USE.
func (ad *address) render(users []string) map[string]any {
	m := core.CloneMap(ad.Extra)
	if m == nil {
		m = map[string]any{}
	}
	m["kind"] = "compute#address"
	m["id"] = strconv.FormatUint(ad.ID, 10)
	m["creationTimestamp"] = core.Timestamp(ad.Created)
	m["name"] = ad.Name
	m["address"] = ad.IP
	m["addressType"] = ad.Type
	m["region"] = ad.Scope.RegionURL()
	m["selfLink"] = core.ComputeRoot + ad.path()
	m["labelFingerprint"] = ad.LabelFingerprint
	m["status"] = reserved
	if ad.Description != "" {
		m["description"] = ad.Description
	}
	if ad.Tier != "" {
		m["networkTier"] = ad.Tier
	}
	if len(ad.Labels) > 0 {
		labels := make(map[string]any, len(ad.Labels))
		for k, v := range ad.Labels {
			labels[k] = v
		}
		m["labels"] = labels
	}
	if len(users) > 0 {
		list := make([]any, len(users))
		for i, u := range users {
			list[i] = u
		}
		m["status"], m["users"] = inUse, list
	}
	return m
}

// userPath is a user's URL as GCP's in-use message names it: from
// projects/ on.
func userPath(url string) string {
	if i := strings.Index(url, "projects/"); i >= 0 {
		return url[i:]
	}
	return url
}
