// Package gcpgroup maps AddressGroup managed resources to Cloud Armor
// address groups (networksecurity v1) and plans the calls that make a group
// what its object says: items added and removed one call each, everything
// else patched, immutable fields reported, never rewritten.
package gcpgroup

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strings"

	"google.golang.org/api/networksecurity/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// Generate is the group to create for p, carrying labels (the user's
// merged with the owner and provenance labels, which win).
func Generate(p v1alpha1.AddressGroupParameters, labels map[string]string) *networksecurity.AddressGroup {
	ag := &networksecurity.AddressGroup{
		Type:     p.Type,
		Capacity: int64(p.Capacity),
		Purpose:  slices.Clone(p.Purpose),
		Items:    slices.Clone(p.Items),
		Labels:   Labels(p.Labels, labels),
	}
	if p.Description != nil {
		ag.Description = *p.Description
	}
	return ag
}

// Labels merges the user's labels with the provider's; the provider's win.
func Labels(user, own map[string]string) map[string]string {
	if len(user)+len(own) == 0 {
		return nil
	}
	out := make(map[string]string, len(user)+len(own))
	maps.Copy(out, user)
	maps.Copy(out, own)
	return out
}

// A Plan is what makes an observed group what its object says.
type Plan struct {
	// Add and Remove are the items to add and remove, as GCP is sent them
	// (Add as the spec writes them, Remove as GCP reports them).
	Add, Remove []string
	// Patch is the update mask of the other fields that differ
	// (description, labels); empty when none does.
	Patch []string
	// Immutable names fields that differ but cannot change in GCP.
	Immutable []string
}

// UpToDate reports whether the plan changes nothing.
func (p Plan) UpToDate() bool {
	return len(p.Add)+len(p.Remove)+len(p.Patch) == 0
}

// String describes the plan for crossplane-runtime's diff log.
func (p Plan) String() string {
	var parts []string
	if len(p.Add) > 0 {
		parts = append(parts, fmt.Sprintf("add %d item(s)", len(p.Add)))
	}
	if len(p.Remove) > 0 {
		parts = append(parts, fmt.Sprintf("remove %d item(s)", len(p.Remove)))
	}
	if len(p.Patch) > 0 {
		parts = append(parts, "patch "+strings.Join(p.Patch, ","))
	}
	return strings.Join(parts, "; ")
}

// PlanGroup compares p (with the labels the group must carry) to the
// observed group. Items are compared as address ranges, so "10.0.0.1" and
// "10.0.0.1/32" are one item. Labels the provider does not own and the
// user does not name are left as GCP has them.
func PlanGroup(p v1alpha1.AddressGroupParameters, own map[string]string, observed *networksecurity.AddressGroup) Plan {
	out := Plan{}
	have := map[string]string{} // canonical -> as GCP reports it
	for _, it := range observed.Items {
		have[Canonical(it)] = it
	}
	want := map[string]bool{}
	for _, it := range p.Items {
		c := Canonical(it)
		if want[c] {
			continue
		}
		want[c] = true
		if _, ok := have[c]; !ok {
			out.Add = append(out.Add, it)
		}
	}
	for c, it := range have {
		if !want[c] {
			out.Remove = append(out.Remove, it)
		}
	}
	slices.Sort(out.Remove)

	if p.Description != nil && *p.Description != observed.Description {
		out.Patch = append(out.Patch, "description")
	}
	if !labelsHeld(Labels(p.Labels, own), observed.Labels) {
		out.Patch = append(out.Patch, "labels")
	}
	if p.Type != observed.Type {
		out.Immutable = append(out.Immutable, fmt.Sprintf("type (GCP has %s)", observed.Type))
	}
	if int64(p.Capacity) != observed.Capacity {
		out.Immutable = append(out.Immutable, fmt.Sprintf("capacity (GCP has %d)", observed.Capacity))
	}
	if len(p.Purpose) > 0 && !sameSet(p.Purpose, observed.Purpose) {
		out.Immutable = append(out.Immutable, fmt.Sprintf("purpose (GCP has %s)", strings.Join(observed.Purpose, ",")))
	}
	return out
}

// PatchBody is the group to send with a Plan's Patch mask. Labels are sent
// whole (GCP replaces the map): the wanted ones over those GCP has.
func PatchBody(p v1alpha1.AddressGroupParameters, own map[string]string, observed *networksecurity.AddressGroup) *networksecurity.AddressGroup {
	ag := &networksecurity.AddressGroup{}
	if p.Description != nil {
		ag.Description = *p.Description
		if ag.Description == "" {
			ag.ForceSendFields = append(ag.ForceSendFields, "Description")
		}
	}
	ag.Labels = Labels(observed.Labels, Labels(p.Labels, own))
	return ag
}

// labelsHeld reports whether every wanted label is in have with its value.
func labelsHeld(want, have map[string]string) bool {
	for k, v := range want {
		if hv, ok := have[k]; !ok || hv != v {
			return false
		}
	}
	return true
}

func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

// Canonical is an item as an address range: a bare address is its host
// range, a CIDR its masked form. What does not parse is kept as written,
// for GCP to refuse.
func Canonical(item string) string {
	item = strings.TrimSpace(item)
	if p, err := netip.ParsePrefix(item); err == nil {
		return p.Masked().String()
	}
	if a, err := netip.ParseAddr(item); err == nil {
		a = a.Unmap()
		return netip.PrefixFrom(a, a.BitLen()).String()
	}
	return item
}

// Observation is the group as its status shows it.
func Observation(ag *networksecurity.AddressGroup, refs []*networksecurity.ListAddressGroupReferencesResponseAddressGroupReference) v1alpha1.AddressGroupObservation {
	o := v1alpha1.AddressGroupObservation{
		Name:       ag.Name,
		CreateTime: ag.CreateTime,
		UpdateTime: ag.UpdateTime,
		ItemCount:  len(ag.Items),
	}
	for _, r := range refs {
		o.References = append(o.References, v1alpha1.AddressGroupReference{SecurityPolicy: r.SecurityPolicy, RulePriority: int32(r.RulePriority)})
	}
	return o
}
