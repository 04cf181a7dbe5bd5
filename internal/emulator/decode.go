package emulator

// enumKeys are the JSON names of enum-typed fields in the SecurityPolicy
// schema tree (taken from the compute v1 discovery document). GCP drops an
// enum sent as "" but keeps a plain string sent as "" (R6, reference §a.4).
var enumKeys = map[string]bool{
	"base": true, "ddosAdaptiveProtection": true, "ddosProtection": true,
	"enforceOnKey": true, "enforceOnKeyType": true, "jsonParsing": true,
	"logLevel": true, "op": true, "ruleVisibility": true, "type": true,
	"versionedExpr": true,
}

// normalize applies GCP's handling of empty values: nulls, empty arrays and
// enums sent as "" are dropped; empty objects and plain "" strings are kept.
func normalize(m map[string]any) map[string]any {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case string:
			if x == "" && enumKeys[k] {
				delete(m, k)
			}
		case []any:
			if len(x) == 0 {
				delete(m, k)
				continue
			}
			for _, e := range x {
				if o, ok := e.(map[string]any); ok {
					normalize(o)
				}
			}
		case map[string]any:
			normalize(x)
		}
	}
	return m
}
