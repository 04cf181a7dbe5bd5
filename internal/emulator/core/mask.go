package core

import "strings"

// SplitMask parses an updateMask: comma-separated field paths, snake_case as
// Terraform sends them (R6) or camelCase, into camelCase path segments.
func SplitMask(mask string) [][]string {
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
