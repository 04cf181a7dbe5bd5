package core

import (
	"fmt"
	"strings"
)

// Lookup returns the value at a dotted path of a rendered resource as text,
// "" when there is none: what a list filter compares.
func Lookup(m map[string]any, path string) string {
	var v any = m
	for _, seg := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			v = x[seg]
		case map[string]string:
			v = x[seg]
		default:
			return ""
		}
	}
	if v == nil {
		return ""
	}
	return fmt.Sprint(v)
}
