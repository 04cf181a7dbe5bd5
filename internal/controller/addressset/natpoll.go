package addressset

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
)

// natPoll is what one poll of a set's Cloud NAT found.
type natPoll struct {
	project string
	// connected is false when no GCP call could be made: everything the
	// set had stands.
	connected bool
	// read are the NATs of each router read, by "region/router".
	read map[string][]gcp.NAT
	// unread are the routers, and unlisted the regions (of a network), GCP
	// did not answer for: their routers keep what they had.
	unread, unlisted []string
	errs             natErrors
}

// natErrors are the failures of one poll, each naming what failed.
type natErrors []error

func (e natErrors) Error() string {
	msgs := make([]string, len(e))
	for i, err := range e {
		msgs[i] = err.Error()
	}
	return strings.Join(msgs, "; ")
}

func (e natErrors) Unwrap() []error { return e }

// poll reads the routers as selects: lists them first when it names a
// network, then one status per router. A router or region that fails does
// not stop the others: each keeps its last NATs.
func (n *nats) poll(ctx context.Context, as *v1alpha1.AddressSet) natPoll {
	sel := as.Spec.NAT
	cl, project, err := n.connect(ctx, as)
	if sel.Project != "" {
		project = sel.Project
	}
	p := natPoll{project: project, read: map[string][]gcp.NAT{}}
	if err != nil {
		// Nothing was asked of GCP: the ProviderConfig is the user's to fix.
		p.errs = natErrors{errors.Wrap(err, "cannot connect to GCP to read Cloud NAT")}
		return p
	}
	p.connected = true
	for _, key := range p.routers(ctx, cl, sel) {
		region, router, _ := strings.Cut(key, "/")
		got, err := cl.NATs(ctx, project, region, router)
		if err != nil {
			p.unread = append(p.unread, key)
			p.errs = append(p.errs, errors.Wrapf(err, "router %s", key))
			continue
		}
		p.read[key] = got
	}
	return p
}

// routers are the routers to read, as "region/router": sel's router, or
// those of sel's network in each of its regions.
func (p *natPoll) routers(ctx context.Context, cl gcp.NATClient, sel *v1alpha1.NATSelector) []string {
	if sel.Router != "" {
		return []string{sel.Region + "/" + sel.Router}
	}
	var out []string
	for _, region := range sel.Regions {
		names, err := cl.Routers(ctx, p.project, region, sel.Network)
		if err != nil {
			p.unlisted = append(p.unlisted, region)
			p.errs = append(p.errs, errors.Wrapf(err, "routers of region %s", region))
			continue
		}
		for _, name := range names {
			out = append(out, region+"/"+name)
		}
	}
	return out
}

// record keeps what a poll read, with the last NATs of what it could not
// read, and the outage when anything failed.
func (s *natSet) record(p natPoll, sel *v1alpha1.NATSelector, now time.Time) {
	s.routers = keepUnread(p, s.routers)
	s.fresh = len(p.read) > 0
	s.last = CollectNATs(s.routers, sel.NAT)
	if len(p.errs) == 0 {
		s.failing = nil
		return
	}
	if s.failing == nil {
		s.failing = &Unreadable{Source: natSource(p.project, sel), Since: now}
	}
	s.failing.Err = p.errs
}

// keepUnread returns p's routers, with the NATs before held for every
// router GCP did not answer for (all of them when it could not be asked):
// not answered is not gone. A router of a network no longer listed is gone.
func keepUnread(p natPoll, before map[string][]gcp.NAT) map[string][]gcp.NAT {
	if !p.connected {
		return before
	}
	out := make(map[string][]gcp.NAT, len(p.read))
	for k, v := range p.read {
		out[k] = v
	}
	for k, v := range before {
		region, _, _ := strings.Cut(k, "/")
		if _, ok := out[k]; !ok && (slices.Contains(p.unread, k) || slices.Contains(p.unlisted, region)) {
			out[k] = v
		}
	}
	return out
}

// answer is what the set holds now, due again after. While part of the
// source cannot be read, the part read comes with the Unreadable, so that a
// new address of a router that answers is allowed at once.
func (s *natSet) answer(after time.Duration) (Collected, time.Duration, error) {
	if s.failing == nil {
		return s.last, after, nil
	}
	u := *s.failing
	u.After = after
	if s.fresh {
		read := s.last
		u.Read = &read
	}
	return Collected{}, after, &u
}

// natSource names sel for messages; project is "" when the ProviderConfig
// could not say.
func natSource(project string, sel *v1alpha1.NATSelector) string {
	what := "the Cloud NAT of router " + sel.Region + "/" + sel.Router
	if sel.NAT != "" {
		what = "Cloud NAT " + sel.NAT + " of router " + sel.Region + "/" + sel.Router
	}
	if sel.Network != "" {
		what = "the Cloud NAT of network " + sel.Network + " in " + strings.Join(sel.Regions, ", ")
	}
	if project != "" {
		what += " of project " + project
	}
	return what
}

// CollectNATs gathers the addresses of the NATs of routers (by
// "region/router"), only the NAT named only when set: active and draining
// alike, since a draining address still carries connections. A NAT that
// needs more addresses (minExtraNatIpsNeeded) or reports one that does not
// parse is a warning, its other addresses kept; a NAT without any address,
// or a named NAT the router does not report, is listed as skipped.
func CollectNATs(routers map[string][]gcp.NAT, only string) Collected {
	out := newCollector(0)
	for _, nats := range mapValuesKeyed(routers) {
		found := false
		for _, n := range nats.v {
			if only != "" && n.Name != only {
				continue
			}
			found = true
			out.out.Nodes++
			collectNAT(out, nats.k+"/"+n.Name, n)
		}
		if only != "" && !found {
			out.skip(nats.k+"/"+only, "the router reports no NAT of that name")
		}
	}
	return out.done()
}

// collectNAT adds the addresses of n, named name, to out.
func collectNAT(out *collector, name string, n gcp.NAT) {
	out.add(n.Active)
	out.add(n.Draining)
	if n.MinExtraIPsNeeded > 0 {
		out.warn(fmt.Sprintf("Cloud NAT %s needs %d more address(es) (minExtraNatIpsNeeded): some VMs get no NAT ports and cannot connect out; add addresses or let it allocate them",
			name, n.MinExtraIPsNeeded))
	}
	if len(n.Invalid) > 0 {
		out.warn(fmt.Sprintf("Cloud NAT %s: invalid address left out: %s", name, strings.Join(n.Invalid, ", ")))
	}
	if len(n.Active)+len(n.Draining) == 0 && len(n.Invalid) == 0 {
		out.skip(name, "no address: the NAT reports none allocated or draining")
	}
}

// keyed is one entry of a map.
type keyed[V any] struct {
	k string
	v V
}

// mapValuesKeyed are m's entries, in key order.
func mapValuesKeyed[V any](m map[string]V) []keyed[V] {
	out := make([]keyed[V], 0, len(m))
	for k, v := range m {
		out = append(out, keyed[V]{k, v})
	}
	slices.SortFunc(out, func(a, b keyed[V]) int { return strings.Compare(a.k, b.k) })
	return out
}
