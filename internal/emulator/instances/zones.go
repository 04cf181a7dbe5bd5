package instances

import (
	"slices"
	"strings"
)

// zones are the zones every project has (a subset of GCP's public list:
// the regions tests and examples use, with their zone letters).
var zones = func() []string {
	regions := map[string]string{
		"us-central1": "abcf", "us-east1": "bcd", "us-east4": "abc", "us-west1": "abc",
		"europe-west1": "bcd", "europe-west3": "abc", "europe-west4": "abc",
		"asia-east1": "abc", "asia-northeast1": "abc", "asia-southeast1": "abc",
	}
	var out []string
	for r, letters := range regions {
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
