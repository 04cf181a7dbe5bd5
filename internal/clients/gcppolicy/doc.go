// Package gcppolicy converts between provider-cloudarmor's API types and
// the Compute v1 security policy types, decides whether GCP is up to date and
// plans what to write. Conversion, comparison and planning are pure: no
// context, no I/O, no Kubernetes client, so every controller of a policy or
// its rules (project and organization ones) reaches the same answer from the
// same snapshot, and the validate command asks about the same requests.
// ApplyPolicy runs a policy's plan through a gcp.PolicyClient, the only I/O
// here.
//
// # Comparing rules
//
// Rules are compared keyed by priority, field by field, after NormalizeRule
// has removed GCP's fill-ins. A set hash is never used: hashing whole rules is
// what made Terraform (TypeSet rules), upjet and Config Connector plan
// needless replacements or miss real edits. NormalizeRule decides that:
//
//   - kind, ForceSendFields, NullFields and the response metadata are dropped;
//   - description "", preview false and enum fields "" equal "absent" (GCP
//     always echoes description and preview, and drops empty enums);
//   - an empty message ({} headerAction, exprOptions, preconfiguredWafConfig,
//     ...) and an empty list equal "absent" (GCP echoes {} when sent {});
//   - source and destination IP ranges are a set: order and duplicates do not
//     matter, a bare address equals its /32 or /128, and a CIDR is compared
//     by its network (10.0.0.1/8 equals 10.0.0.0/8, IPv6 in canonical
//     lower-case form). GCP stores ranges exactly as sent, so only the
//     meaning of a range can decide equality, never its spelling. "*" is
//     kept as is and differs from 0.0.0.0/0 (which is IPv4 only);
//   - the other networkMatch lists (protocols, ports, region codes, ASNs,
//     user-defined field values) are sets too and are sorted;
//   - every other list keeps its order: GCP echoes it as sent, so a reordered
//     spec is a (harmless) change;
//   - a default rule (priority 2147483647) without match or networkMatch
//     matches "*", because that is what GCP requires of it.
//
// enforceOnKey and enforceOnKeyConfigs are never equated: moving from one to
// the other is drift, and RuleUpdateMask names both so patchRule clears the
// one no longer wanted.
//
// # Top-level policy fields
//
// A top-level field the spec leaves unset is "don't care", at every level:
// GeneratePolicyPatch and PatchUpToDate overlay the spec onto a copy of what
// GCP holds, so a server default inside a config the spec sets (for example
// advancedOptionsConfig.jsonParsing) never shows up as drift.
//
// # Late initialization
//
// This package deliberately has no LateInitialize. Because every unset
// field is "don't care", copying server defaults into spec would change no
// decision, and it would put values into spec.forProvider that the user never
// wrote, which a GitOps tool then shows as a diff or reverts.
// Server-filled values (type, fingerprints, the rules GCP holds) are reported
// in status.atProvider by GenerateObservation instead. Rules are reported in
// their NormalizeRule form, so status shows exactly what the comparison sees
// (drift made in the console included) and GCP's fill-ins cost no space.
package gcppolicy
