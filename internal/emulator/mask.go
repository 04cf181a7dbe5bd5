package emulator

import (
	"strings"
)

// splitMask parses an updateMask: comma-separated field paths, snake_case as
// Terraform sends them (R6) or camelCase, into camelCase path segments.
func splitMask(mask string) [][]string {
	var out [][]string
	for _, p := range strings.Split(mask, ",") {
		p = strings.TrimSpace(p)
		if p == "" {
			continue
		}
		segs := strings.Split(p, ".")
		for i, s := range segs {
			segs[i] = camel(s)
		}
		out = append(out, segs)
	}
	return out
}

// camel turns rate_limit_options into rateLimitOptions.
func camel(s string) string {
	parts := strings.Split(s, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}

// hasPath reports whether m has a (normalised, hence non-empty) value at path.
func hasPath(m map[string]any, path []string) bool {
	for i, seg := range path {
		v, ok := m[seg]
		if !ok {
			return false
		}
		if i == len(path)-1 {
			return true
		}
		if m, ok = v.(map[string]any); !ok {
			return false
		}
	}
	return false
}

// deletePath removes the value at path, if any.
func deletePath(m map[string]any, path []string) {
	for i, seg := range path {
		if i == len(path)-1 {
			delete(m, seg)
			return
		}
		next, ok := m[seg].(map[string]any)
		if !ok {
			return
		}
		m = next
	}
}

// merge copies src into dst: objects merge recursively, anything else
// (scalars, arrays) replaces.
func merge(dst, src map[string]any) map[string]any {
	for k, v := range src {
		sm, sok := v.(map[string]any)
		dm, dok := dst[k].(map[string]any)
		if sok && dok {
			dst[k] = merge(dm, sm)
			continue
		}
		dst[k] = cloneValue(v)
	}
	return dst
}
