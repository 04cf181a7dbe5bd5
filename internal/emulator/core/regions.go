package core

import (
	"maps"
	"slices"
)

// Regions are the regions every project has, with their zones' letters: a
// subset of GCP's public list, the regions tests and examples use. A
// regional or zonal API answers any other one as unknown.
var Regions = map[string]string{
	"us-central1": "abcf", "us-east1": "bcd", "us-east4": "abc", "us-west1": "abc",
	"europe-west1": "bcd", "europe-west3": "abc", "europe-west4": "abc",
	"asia-east1": "abc", "asia-northeast1": "abc", "asia-southeast1": "abc",
}

// RegionNames are the names of Regions, sorted.
var RegionNames = slices.Sorted(maps.Keys(Regions))

// KnownRegion reports whether every project has region r.
func KnownRegion(r string) bool {
	_, ok := Regions[r]
	return ok
}

// CheckKnownRegion refuses a region the project does not have, as compute
// does for a regional object's path.
func CheckKnownRegion(sc Scope) error {
	if !KnownRegion(sc.Region) {
		return ErrInvalidField("region", sc.Region, "Unknown region.")
	}
	return nil
}
