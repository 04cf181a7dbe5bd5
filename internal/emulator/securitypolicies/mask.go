package securitypolicies

import "github.com/armorplane/provider-cloudarmor/internal/emulator/core"

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

// applyPatch is how PATCH and patchRule change a stored object: every path
// the updateMask names is cleared first ("fields to be cleared"), then the
// body is merged in with mergePatch. So a field the body sends is set (a
// masked one replaced whole), a masked field the body leaves out is cleared,
// and any other field the body leaves out is kept. cur is modified.
func applyPatch(cur, body map[string]any, mask [][]string) map[string]any {
	if cur == nil {
		cur = map[string]any{}
	}
	for _, path := range mask {
		deletePath(cur, path)
	}
	return core.Normalize(mergePatch(cur, body))
}

// mergePatch merges src into dst the way JSON merge patch (RFC 7396) does,
// which is how compute documents its PATCH methods: objects merge field by
// field, anything else (scalars, and lists, which are never appended to)
// replaces, and null removes the field. The caller normalises the result, so
// a sent [] or enum "" ends up cleared too.
func mergePatch(dst, src map[string]any) map[string]any {
	for k, v := range src {
		switch sv := v.(type) {
		case nil:
			delete(dst, k)
		case map[string]any:
			dm, ok := dst[k].(map[string]any)
			if !ok {
				dm = map[string]any{}
			}
			dst[k] = mergePatch(dm, sv)
		default:
			dst[k] = core.CloneValue(v)
		}
	}
	return dst
}
