// Package policyeval evaluates a Cloud Armor security policy against one
// HTTP request, offline: which rule Cloud Armor would apply, and why.
//
// The semantics follow Google's public documentation ("Security policy
// overview", https://cloud.google.com/armor/docs/security-policy-overview,
// and "Custom rules language reference",
// https://cloud.google.com/armor/docs/rules-language-reference): rules are
// evaluated in ascending priority and the first match wins; the default rule
// (priority 2147483647) comes last; a rule in preview is evaluated and
// reported but not enforced. Match conditions are SRC_IPS_V1 source ranges
// or expressions in Cloud Armor's rules language, evaluated with CEL.
//
// Preconfigured WAF rules (evaluatePreconfiguredWaf, evaluatePreconfiguredExpr)
// run the OWASP Core Rule Set 4.22 with Coraza, standing in for the CRS
// version of each Cloud Armor set (waf.go; docs/evaluation.md says where the
// two differ).
//
// What cannot be known offline (threat intelligence, reCAPTCHA tokens,
// Adaptive Protection, a request body, an address group that is not given,
// an attribute the request leaves out) is never guessed: the
// verdict says "not evaluable offline: <what>" whenever the outcome depends
// on it. An expression that does not depend on it (false && unknown) is
// still decided, as CEL's commutative && and || allow.
//
// The package has no state beyond compiled expressions and CRS rule files
// (compiled once per process, on first use), so the emulator or a controller
// could call it as well as the provider's `test` command.
package policyeval
