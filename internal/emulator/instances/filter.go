package instances

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// A filter is the part of compute's list filter syntax the emulator
// serves: one comparison, or parenthesized comparisons ANDed (side by side
// or joined by AND). A comparison is `field op value`, op one of = and !=
// (AIP-160: the value as is) or eq and ne (an RE2 regular expression the
// whole field must match); the two kinds cannot be mixed, as in compute.
// OR is refused as an invalid expression (chosen: compute serves it).
type filter []comparison

type comparison struct {
	field  string
	negate bool
	match  func(string) bool
}

var comparisonExpr = regexp.MustCompile(`^\s*([A-Za-z][A-Za-z0-9_.-]*)\s*(!=|=|\beq\b|\bne\b)\s*("(?:[^"\\]|\\.)*"|'[^']*'|[^\s()"']+)\s*$`)

func errFilter(f string) error {
	return core.ErrInvalidField("filter", f, "Invalid list filter expression.")
}

func parseFilter(f string) (filter, error) {
	if strings.TrimSpace(f) == "" {
		return nil, nil
	}
	parts, ok := groups(f)
	if !ok {
		return nil, errFilter(f)
	}
	var out filter
	regex := map[bool]bool{}
	for _, p := range parts {
		c, isRegex, ok := parseComparison(p)
		if !ok {
			return nil, errFilter(f)
		}
		regex[isRegex] = true
		out = append(out, c)
	}
	if len(regex) > 1 {
		return nil, errFilter(f)
	}
	return out, nil
}

// groups splits a filter into its comparisons: the whole of it when it is
// not parenthesized, else the contents of each top-level parenthesis, with
// nothing but spaces and AND between them.
func groups(f string) ([]string, bool) {
	s := strings.TrimSpace(f)
	if !strings.HasPrefix(s, "(") {
		return []string{s}, true
	}
	var out []string
	for s != "" {
		if !strings.HasPrefix(s, "(") {
			return nil, false
		}
		end := closing(s)
		if end < 0 {
			return nil, false
		}
		out = append(out, s[1:end])
		s = strings.TrimSpace(s[end+1:])
		if rest, ok := strings.CutPrefix(s, "AND "); ok {
			s = strings.TrimSpace(rest)
		}
	}
	return out, true
}

// closing is the index of the parenthesis that closes s[0], quotes
// skipped, or -1.
func closing(s string) int {
	var quote byte
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case quote != 0 && c == '\\':
			i++
		case quote != 0:
			if c == quote {
				quote = 0
			}
		case c == '"' || c == '\'':
			quote = c
		case c == '(':
			return -1
		case c == ')':
			return i
		}
	}
	return -1
}

func parseComparison(s string) (comparison, bool, bool) {
	m := comparisonExpr.FindStringSubmatch(s)
	if m == nil {
		return comparison{}, false, false
	}
	field, op, value := m[1], m[2], unquote(m[3])
	c := comparison{field: field, negate: op == "!=" || op == "ne"}
	if op == "eq" || op == "ne" {
		re, err := regexp.Compile("^(?:" + value + ")$")
		if err != nil {
			return comparison{}, true, false
		}
		c.match = re.MatchString
		return c, true, true
	}
	c.match = func(got string) bool { return got == value }
	return c, false, true
}

func unquote(v string) string {
	switch {
	case strings.HasPrefix(v, `"`):
		if u, err := strconv.Unquote(v); err == nil {
			return u
		}
		return strings.Trim(v, `"`)
	case strings.HasPrefix(v, `'`):
		return strings.Trim(v, `'`)
	}
	return v
}

// matches reports whether a rendered instance passes every comparison.
func (f filter) matches(m map[string]any) bool {
	for _, c := range f {
		if c.match(core.Lookup(m, c.field)) == c.negate {
			return false
		}
	}
	return true
}
