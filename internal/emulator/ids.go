package emulator

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sort"
	"time"
)

// emptyLabelFingerprint is the labelFingerprint compute reports for a
// resource without labels.
const emptyLabelFingerprint = "42WmSpB8rSM="

// labelFingerprint is a hash of the labels, so it changes exactly when the
// labels do.
func labelFingerprint(labels map[string]string) string {
	if len(labels) == 0 {
		return emptyLabelFingerprint
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, labels[k])
	}
	return base64.StdEncoding.EncodeToString(h.Sum(nil)[:8])
}

// pacific is the zone GCP timestamps are written in.
var pacific = func() *time.Location {
	if l, err := time.LoadLocation("America/Los_Angeles"); err == nil {
		return l
	}
	return time.FixedZone("PST", -8*3600)
}()

// timestamp formats like "2023-02-10T13:23:43.497-08:00".
func timestamp(t time.Time) string {
	return t.In(pacific).Format("2006-01-02T15:04:05.000-07:00")
}
