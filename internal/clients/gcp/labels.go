package gcp

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// MaxLabelLength is the most characters GCP allows in a label key or value.
const MaxLabelLength = 63

// LabelKey returns s as a GCP label key: lowercase, every character other
// than a-z, 0-9, '_' and '-' replaced by '_', starting with a letter (an 'x'
// is put before anything else), and at most 63 characters (see LabelValue).
func LabelKey(s string) string {
	k := labelChars(s)
	if k == "" || k[0] < 'a' || k[0] > 'z' {
		k = "x" + k
	}
	return fit(k, s)
}

// LabelValue returns s as a GCP label value: lowercase, every character
// other than a-z, 0-9, '_' and '-' replaced by '_', at most 63 characters.
// A longer value keeps its first 54 characters, a '-' and 8 hex characters
// of a hash of s, so that two long values that share a prefix stay apart.
// The empty value stays empty: GCP allows it.
func LabelValue(s string) string {
	return fit(labelChars(s), s)
}

// labelChars lowercases s and replaces what GCP does not allow in labels.
func labelChars(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range strings.ToLower(s) {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// fit shortens l, made from original, to MaxLabelLength characters.
func fit(l, original string) string {
	if len(l) <= MaxLabelLength {
		return l
	}
	sum := sha256.Sum256([]byte(original))
	return l[:MaxLabelLength-9] + "-" + hex.EncodeToString(sum[:4])
}

// Labels returns in with every key and value made a GCP label by LabelKey
// and LabelValue. Two keys that become the same label keep the value of
// the key that sorts last, so the result does not depend on map order.
func Labels(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	from := make(map[string]string, len(in))
	for k, v := range in {
		lk := LabelKey(k)
		if prev, ok := from[lk]; ok && prev > k {
			continue
		}
		out[lk], from[lk] = LabelValue(v), k
	}
	return out
}
