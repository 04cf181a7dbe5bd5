package instances

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// Instance statuses the emulator uses.
const (
	statusProvisioning = "PROVISIONING"
	statusRunning      = "RUNNING"
	statusTerminated   = "TERMINATED"
)

// An instance is one Compute Engine instance.
type instance struct {
	Project, Zone, Name string
	ID                  uint64
	Created             time.Time
	// Running is when a PROVISIONING instance becomes RUNNING: its insert
	// operation's end.
	Running          time.Time
	Stopped          bool
	MachineType      string
	Labels           map[string]string
	LabelFingerprint string
	Fingerprint      string
	Interfaces       []nic
}

type nic struct {
	Network, Subnetwork, NetworkIP string
	AccessConfigs                  []accessConfig
	Ipv6AccessConfigs              []accessConfig
}

type accessConfig struct {
	Type, Name, NatIP, NetworkTier string
	// Ephemeral: the emulator chose NatIP, and takes it back on stop.
	Ephemeral                bool
	ExternalIpv6             string
	ExternalIpv6PrefixLength int64
}

func path(project, zone, name string) string {
	return "projects/" + project + "/zones/" + zone + "/instances/" + name
}

func (i *instance) path() string { return path(i.Project, i.Zone, i.Name) }

func (i *instance) status(now time.Time) string {
	switch {
	case i.Stopped:
		return statusTerminated
	case now.Before(i.Running):
		return statusProvisioning
	}
	return statusRunning
}

// render is the instance as GET returns it.
func (i *instance) render(now time.Time) map[string]any {
	zone := core.ComputeRoot + "projects/" + i.Project + "/zones/" + i.Zone
	m := map[string]any{
		"kind":              "compute#instance",
		"id":                strconv.FormatUint(i.ID, 10),
		"creationTimestamp": i.Created.Format("2006-01-02T15:04:05.000-07:00"),
		"name":              i.Name,
		"zone":              zone,
		"machineType":       zone + "/machineTypes/" + i.MachineType,
		"status":            i.status(now),
		"labelFingerprint":  i.LabelFingerprint,
		"fingerprint":       i.Fingerprint,
		"selfLink":          core.ComputeRoot + i.path(),
		"networkInterfaces": renderNICs(i.Interfaces),
	}
	if len(i.Labels) > 0 {
		m["labels"] = maps.Clone(i.Labels)
	}
	return m
}

func renderNICs(nics []nic) []any {
	out := make([]any, len(nics))
	for n, c := range nics {
		m := map[string]any{"kind": "compute#networkInterface", "name": fmt.Sprintf("nic%d", n),
			"network": c.Network, "subnetwork": c.Subnetwork, "networkIP": c.NetworkIP, "stackType": "IPV4_ONLY"}
		if len(c.AccessConfigs) > 0 {
			m["accessConfigs"] = renderAccessConfigs(c.AccessConfigs)
		}
		if len(c.Ipv6AccessConfigs) > 0 {
			m["ipv6AccessConfigs"] = renderAccessConfigs(c.Ipv6AccessConfigs)
			m["stackType"] = "IPV4_IPV6"
		}
		out[n] = m
	}
	return out
}

func renderAccessConfigs(acs []accessConfig) []any {
	out := make([]any, len(acs))
	for n, ac := range acs {
		m := map[string]any{"kind": "compute#accessConfig", "type": ac.Type, "name": ac.Name, "networkTier": ac.NetworkTier}
		if ac.NatIP != "" {
			m["natIP"] = ac.NatIP
		}
		if ac.ExternalIpv6 != "" {
			m["externalIpv6"] = ac.ExternalIpv6
			m["externalIpv6PrefixLength"] = ac.ExternalIpv6PrefixLength
		}
		out[n] = m
	}
	return out
}

// sorted returns instances by zone, then name: GCP's order.
func sorted(in []*instance) []*instance {
	slices.SortFunc(in, func(a, b *instance) int {
		if a.Zone != b.Zone {
			if a.Zone < b.Zone {
				return -1
			}
			return 1
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return in
}
