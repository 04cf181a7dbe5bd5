package instances

import (
	"fmt"
	"maps"
	"net/http"
	"net/netip"
	"regexp"
	"strings"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

var namePattern = regexp.MustCompile(`^[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?$`)

// zoneOf refuses a zone the project does not have, as compute does.
func zoneOf(r *http.Request) error {
	if z := r.PathValue("zone"); !knownZone(z) {
		return core.ErrInvalidField("zone", z, "Unknown zone.")
	}
	return nil
}

func errRequired(field string) *core.Error {
	return &core.Error{Code: 400, Reason: "required", Message: fmt.Sprintf("Required field '%s' not specified", field)}
}

// insert creates a RUNNING instance (PROVISIONING until its operation is
// done) with the request's name, machine type, labels and network
// interfaces; an ONE_TO_ONE_NAT access config without a natIP gets an
// ephemeral one, an interface without a networkIP an internal one.
func (a *API) insert(w http.ResponseWriter, r *http.Request) {
	var body compute.Instance
	if _, err := core.Decode(w, r, a.host.MaxBodyBytes(), &body, "instance"); err != nil {
		core.WriteError(w, err)
		return
	}
	if err := validate(r, &body); err != nil {
		core.WriteError(w, err)
		return
	}
	project, zone := r.PathValue("project"), r.PathValue("zone")
	a.mu.Lock()
	defer a.mu.Unlock()
	p := path(project, zone, body.Name)
	if _, ok := a.instances[p]; ok {
		core.WriteError(w, core.ErrAlreadyExists(p))
		return
	}
	now := a.host.Now()
	gen := a.host.Gen()
	i := &instance{Project: project, Zone: zone, Name: body.Name, ID: gen.ID(), Created: now,
		Running: now.Add(a.host.OpLatency()), MachineType: lastSegment(body.MachineType),
		Labels: maps.Clone(body.Labels), LabelFingerprint: gen.Fingerprint(), Fingerprint: gen.Fingerprint()}
	for _, n := range body.NetworkInterfaces {
		i.Interfaces = append(i.Interfaces, a.nicOf(project, zone, n))
	}
	a.instances[p] = i
	a.answer(w, "instances.insert", a.newOp(i, "insert"))
}

// validate checks an insert's body the way compute does, for the fields
// the emulator keeps.
func validate(r *http.Request, i *compute.Instance) error {
	if err := zoneOf(r); err != nil {
		return err
	}
	switch {
	case i.Name == "":
		return errRequired("resource.name")
	case !namePattern.MatchString(i.Name):
		return core.ErrInvalidField("resource.name", i.Name, "Must be a match of regex '(?:[a-z](?:[-a-z0-9]{0,61}[a-z0-9])?)'")
	case i.MachineType == "":
		return errRequired("resource.machineType")
	case len(i.NetworkInterfaces) == 0:
		return errRequired("resource.networkInterfaces")
	}
	if err := core.ValidateLabels(i.Labels); err != nil {
		return err
	}
	for n, c := range i.NetworkInterfaces {
		if err := validateNIC(n, c); err != nil {
			return err
		}
	}
	return nil
}

func validateNIC(n int, c *compute.NetworkInterface) error {
	field := fmt.Sprintf("resource.networkInterfaces[%d]", n)
	if ip, err := netip.ParseAddr(c.NetworkIP); c.NetworkIP != "" && (err != nil || !ip.Is4()) {
		return core.ErrInvalidField(field+".networkIP", c.NetworkIP, "Must be an IPv4 address.")
	}
	if len(c.AccessConfigs) > 1 {
		return core.ErrInvalidField(field+".accessConfigs", fmt.Sprint(len(c.AccessConfigs)), "At most one access config currently supported.")
	}
	for k, ac := range c.AccessConfigs {
		f := fmt.Sprintf("%s.accessConfigs[%d]", field, k)
		if ac.Type != "" && ac.Type != "ONE_TO_ONE_NAT" {
			return core.ErrInvalidField(f+".type", ac.Type, "Must be ONE_TO_ONE_NAT.")
		}
		if ip, err := netip.ParseAddr(ac.NatIP); ac.NatIP != "" && (err != nil || !ip.Is4()) {
			return core.ErrInvalidField(f+".natIP", ac.NatIP, "Must be an IPv4 address.")
		}
	}
	for k, ac := range c.Ipv6AccessConfigs {
		if ip, err := netip.ParseAddr(ac.ExternalIpv6); ac.ExternalIpv6 != "" && (err != nil || !ip.Is6()) {
			return core.ErrInvalidField(fmt.Sprintf("%s.ipv6AccessConfigs[%d].externalIpv6", field, k), ac.ExternalIpv6, "Must be an IPv6 address.")
		}
	}
	return nil
}

// nicOf is the interface an insert asked for, with the addresses GCP
// would choose filled in. a.mu must be held.
func (a *API) nicOf(project, zone string, n *compute.NetworkInterface) nic {
	c := nic{Network: n.Network, Subnetwork: n.Subnetwork, NetworkIP: n.NetworkIP}
	if c.Network == "" {
		c.Network = core.ComputeRoot + "projects/" + project + "/global/networks/default"
	}
	if c.Subnetwork == "" {
		c.Subnetwork = core.ComputeRoot + "projects/" + project + "/regions/" + regionOf(zone) + "/subnetworks/default"
	}
	if c.NetworkIP == "" {
		c.NetworkIP = a.address(project, netip.MustParseAddr("10.128.0.2"))
	}
	for _, ac := range n.AccessConfigs {
		out := accessConfig{Type: "ONE_TO_ONE_NAT", Name: ac.Name, NatIP: ac.NatIP, NetworkTier: ac.NetworkTier}
		if out.Name == "" {
			out.Name = "External NAT"
		}
		if out.NetworkTier == "" {
			out.NetworkTier = "PREMIUM"
		}
		if out.NatIP == "" {
			out.NatIP, out.Ephemeral = a.ephemeral(project), true
		}
		c.AccessConfigs = append(c.AccessConfigs, out)
	}
	for _, ac := range n.Ipv6AccessConfigs {
		c.Ipv6AccessConfigs = append(c.Ipv6AccessConfigs, accessConfig{Type: "DIRECT_IPV6", Name: "external-ipv6",
			NetworkTier: "PREMIUM", ExternalIpv6: ac.ExternalIpv6, ExternalIpv6PrefixLength: max(ac.ExternalIpv6PrefixLength, 96)})
	}
	return c
}

// ephemeral hands out an external address from 34.0.0.0/8 (chosen: a
// range GCP's ephemeral addresses come from). a.mu must be held.
func (a *API) ephemeral(project string) string {
	return a.address(project+"/external", netip.MustParseAddr("34.0.0.1"))
}

// address is the next address from base in the sequence named key.
func (a *API) address(key string, base netip.Addr) string {
	n := a.next[key]
	a.next[key] = n + 1
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += n
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}).String()
}

// find returns the instance of the request's path. a.mu must be held.
func (a *API) find(r *http.Request) (*instance, error) {
	if err := zoneOf(r); err != nil {
		return nil, err
	}
	p := path(r.PathValue("project"), r.PathValue("zone"), r.PathValue("instance"))
	i, ok := a.instances[p]
	if !ok {
		return nil, core.ErrNotFound(p)
	}
	return i, nil
}

// withInstance calls fn with the instance of the request's path, a.mu
// held, or answers that it does not exist.
func (a *API) withInstance(w http.ResponseWriter, r *http.Request, fn func(*instance)) {
	a.mu.Lock()
	defer a.mu.Unlock()
	i, err := a.find(r)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	fn(i)
}

func (a *API) get(w http.ResponseWriter, r *http.Request) {
	a.withInstance(w, r, func(i *instance) { core.WriteJSON(w, http.StatusOK, i.render(a.host.Now())) })
}

// delete removes the instance at once (chosen: GCP shows it STOPPING
// until the operation ends).
func (a *API) delete(w http.ResponseWriter, r *http.Request) {
	a.withInstance(w, r, func(i *instance) {
		delete(a.instances, i.path())
		a.answer(w, "instances.delete", a.newOp(i, "delete"))
	})
}

// setLabels replaces the labels when the request carries the current
// labelFingerprint, as compute requires (an empty one included).
func (a *API) setLabels(w http.ResponseWriter, r *http.Request) {
	var body compute.InstancesSetLabelsRequest
	if _, err := core.Decode(w, r, a.host.MaxBodyBytes(), &body, "instances_set_labels_request"); err != nil {
		core.WriteError(w, err)
		return
	}
	if err := core.ValidateLabels(body.Labels); err != nil {
		core.WriteError(w, err)
		return
	}
	a.withInstance(w, r, func(i *instance) {
		if body.LabelFingerprint != i.LabelFingerprint {
			core.WriteError(w, &core.Error{Code: 412, Reason: "conditionNotMet",
				Message: "Labels fingerprint either invalid or resource labels have changed"})
			return
		}
		i.Labels, i.LabelFingerprint = maps.Clone(body.Labels), a.host.Gen().Fingerprint()
		a.answer(w, "instances.setLabels", a.newOp(i, "setLabels"))
	})
}

// stop makes the instance TERMINATED; its ephemeral external addresses
// go back to GCP, as a stopped instance's do.
func (a *API) stop(w http.ResponseWriter, r *http.Request) {
	a.power(w, r, "stop", func(i *instance) {
		i.Stopped = true
		for n := range i.Interfaces {
			for k, ac := range i.Interfaces[n].AccessConfigs {
				if ac.Ephemeral {
					i.Interfaces[n].AccessConfigs[k].NatIP = ""
				}
			}
		}
	})
}

// start makes a stopped instance RUNNING with new ephemeral addresses.
func (a *API) start(w http.ResponseWriter, r *http.Request) {
	a.power(w, r, "start", func(i *instance) {
		i.Stopped = false
		for n := range i.Interfaces {
			for k, ac := range i.Interfaces[n].AccessConfigs {
				if ac.Ephemeral && ac.NatIP == "" {
					i.Interfaces[n].AccessConfigs[k].NatIP = a.ephemeral(i.Project)
				}
			}
		}
	})
}

func (a *API) power(w http.ResponseWriter, r *http.Request, verb string, change func(*instance)) {
	a.withInstance(w, r, func(i *instance) {
		change(i)
		a.answer(w, "instances."+verb, a.newOp(i, verb))
	})
}

func lastSegment(url string) string { return url[strings.LastIndex(url, "/")+1:] }
