package securitypolicies

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"sort"
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
