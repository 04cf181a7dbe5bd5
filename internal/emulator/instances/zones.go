package instances

import (
	"slices"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// zones are the zones every project has: those of core.Regions.
var zones = func() []string {
	var out []string
	for r, letters := range core.Regions {
		for _, l := range letters {
			out = append(out, r+"-"+string(l))
		}
	}
	slices.Sort(out)
	return out
}()

func knownZone(z string) bool {
	_, ok := slices.BinarySearch(zones, z)
	return ok
}

// regionOf is the region of a zone: us-central1-a is in us-central1.
func regionOf(zone string) string {
	return zone[:strings.LastIndex(zone, "-")]
}
