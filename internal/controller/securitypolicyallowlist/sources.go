package securitypolicyallowlist

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/netip"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/addressset"
	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

// resolved is what an allowlist's sources hold now.
type resolved struct {
	// ranges are every source's distinct ranges, minimal (iprange.Minimal).
	ranges []netip.Prefix
	// unmatched names the sources that contributed no range, in spec order.
	unmatched []string
	// warnings are findings that left something out without stopping the rest.
	warnings []string
	// pending names the node sources not computed yet; nothing is planned
	// until every source is.
	pending []string
	// held says, for each node source that keeps addresses its Nodes no
	// longer have, why.
	held []string
	// unreadable says whether a held source is held because it cannot be
	// read, rather than by its shrink hold.
	unreadable bool
	// keepAllowed says a source cannot be read and has no last addresses
	// to hold: a set new to an allowlist whose rules may already allow what
	// it reads (an upgrade that moves a source to the provider, before the
	// platform granted the provider its kind). What the rules allow stays
	// until the source answers; additions go at once.
	keepAllowed bool
}

// sets is what the AddressSets publish, by name.
type sets interface {
	Get(types.NamespacedName) (addressset.Published, bool)
}

// resolve gathers the ranges of every source. have are the allowlist's
// AddressSets, by name. It fails on an invalid CIDR and on a required source
// that yields nothing.
func resolve(al *v1alpha1.SecurityPolicyAllowlist, have map[string]*v1alpha1.AddressSet, pub sets) (resolved, error) {
	out := resolved{}
	var ranges []netip.Prefix
	for _, src := range al.Spec.Sources {
		if !src.ReadBySet() {
			if len(src.CIDRs) == 0 {
				out.unmatched = append(out.unmatched, src.Name)
				continue
			}
			for _, c := range src.CIDRs {
				p, err := iprange.Parse(c)
				if err != nil {
					return resolved{}, fmt.Errorf("static source %q: %w", src.Name, err)
				}
				ranges = append(ranges, p)
			}
			continue
		}
		name := SetName(al.GetName(), src.Name)
		as, ok := have[name]
		var p addressset.Published
		if ok {
			p, ok = pub.Get(types.NamespacedName{Namespace: al.GetNamespace(), Name: name})
		}
		if !ok || p.UID != as.GetUID() || p.Generation != as.GetGeneration() {
			out.pending = append(out.pending, fmt.Sprintf("%q", src.Name))
			continue
		}
		found := 0
		for _, a := range p.Addresses {
			pr, err := iprange.Parse(a)
			if err != nil {
				out.warnings = append(out.warnings, fmt.Sprintf("node source %q: address %q left out: %v", src.Name, a, err))
				continue
			}
			ranges = append(ranges, pr)
			found++
		}
		if p.SkippedCount > 0 {
			out.warnings = append(out.warnings, skippedWarning(src, p))
		}
		for _, w := range p.Warnings {
			out.warnings = append(out.warnings, fmt.Sprintf("%s source %q: %s", sourceKind(src), src.Name, w))
		}
		if p.Held != "" {
			out.held = append(out.held, fmt.Sprintf("%s source %q: AddressSet %s: %s", sourceKind(src), src.Name, name, p.Held))
			out.unreadable = out.unreadable || p.Unreadable
		}
		if found > 0 {
			continue
		}
		if p.Unreadable {
			out.keepAllowed = true
			continue
		}
		msg := noAddress(src, p.Nodes)
		if src.Required {
			return resolved{}, fmt.Errorf("%s, and the source is required; the rules are left as they are", msg)
		}
		out.unmatched = append(out.unmatched, src.Name)
		out.warnings = append(out.warnings, msg)
	}
	out.ranges = iprange.Minimal(ranges)
	return out, nil
}

// sourceKind is "node", "instance", "nat", "service", "object" or
// "configMap", as messages call a source.
func sourceKind(src v1alpha1.AllowlistSource) string {
	switch {
	case src.Instances != nil:
		return "instance"
	case src.NAT != nil:
		return "nat"
	case src.Services != nil:
		return "service"
	case src.Object != nil:
		return "object"
	case src.ConfigMap != nil:
		return "configMap"
	}
	return "node"
}

// noAddress says why src, a source read by a set, yields no address.
func noAddress(src v1alpha1.AllowlistSource, matched int) string {
	switch {
	case src.Services != nil:
		return fmt.Sprintf("service source %q: no address: %d Service(s) of type LoadBalancer match labels %s", src.Name, matched, labelString(src.Services.MatchLabels))
	case src.Object != nil && src.Object.ObjectName != "":
		return fmt.Sprintf("object source %q: no address: %s %s has none at %s", src.Name, src.Object.Kind, src.Object.ObjectName, src.Object.FieldPath)
	case src.Object != nil:
		return fmt.Sprintf("object source %q: no address: %d %s object(s) match labels %s, none with an address at %s", src.Name, matched, src.Object.Kind, labelString(src.Object.MatchLabels), src.Object.FieldPath)
	case src.ConfigMap != nil:
		return fmt.Sprintf("configMap source %q: no address: ConfigMap %s key %q lists none", src.Name, src.ConfigMap.Name, src.ConfigMap.Key)
	}
	if src.Instances != nil {
		return fmt.Sprintf("instance source %q: no address: %d instance(s) match labels %s", src.Name, matched, labelString(src.Instances.MatchLabels))
	}
	if src.NAT != nil {
		return fmt.Sprintf("nat source %q: no address: %d Cloud NAT(s) read", src.Name, matched)
	}
	where := ""
	if c := src.Nodes.Cluster; c != nil {
		where = fmt.Sprintf(" in the cluster of Secret %s", c.KubeconfigSecretRef.Name)
	}
	return fmt.Sprintf("node source %q: no address: %d node(s)%s match labels %s", src.Name, matched, where, labelString(src.Nodes.MatchLabels))
}

// skippedWarning names what a source's set left out: Nodes, instances or
// NATs, all "node(s)" as a set counts them.
func skippedWarning(src v1alpha1.AllowlistSource, p addressset.Published) string {
	names := make([]string, 0, len(p.Skipped))
	for _, n := range p.Skipped {
		names = append(names, n.Name+" ("+n.Reason+")")
	}
	more := ""
	if extra := p.SkippedCount - len(p.Skipped); extra > 0 {
		more = fmt.Sprintf(" and %d more", extra)
	}
	return fmt.Sprintf("%s source %q: %d node(s) left out, the others kept: %s%s", sourceKind(src), src.Name, p.SkippedCount, strings.Join(names, ", "), more)
}

func labelString(l map[string]string) string {
	if len(l) == 0 {
		return "{} (every node)"
	}
	kv := make([]string, 0, len(l))
	for k, v := range l {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return "{" + strings.Join(kv, ",") + "}"
}

// SetName is the AddressSet of a node source, <allowlist>-nodes-<source>,
// made a valid object name: a source name may hold characters an object name
// may not (upper case, spaces), so such a name is lowered, its other
// characters made dashes, and a hash of the source name appended to keep two
// such names apart. The IPAllowlist composition named its AddressSets so, which
// lets an allowlist adopt them on upgrade.
func SetName(allowlist, source string) string {
	clean := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '-':
			return r
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return '-'
	}, source)
	name := allowlist + "-nodes-" + strings.Trim(clean, "-")
	if clean != source || len(name) > maxNameLength {
		sum := sha256.Sum256([]byte(source))
		suffix := "-" + hex.EncodeToString(sum[:])[:8]
		name = strings.TrimRight(name[:min(len(name), maxNameLength-len(suffix))], "-.") + suffix
	}
	return name
}

// maxNameLength is a Kubernetes object name's limit (a DNS subdomain).
const maxNameLength = 253
