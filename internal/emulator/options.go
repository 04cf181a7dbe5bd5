package emulator

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/securitypolicies"
)

// Auth modes accepted by Options.Auth.
const (
	// AuthRequire accepts any non-empty "Authorization: Bearer" header, like
	// GCP does before it checks the token.
	AuthRequire = "require"
	// AuthAny accepts requests with or without credentials.
	AuthAny = "any"
	// AuthToken accepts only "Authorization: Bearer <Options.Token>".
	AuthToken = "token"
)

// Options configure a Server. The zero value is a strict, fault-free emulator
// whose operations are DONE on the first poll.
type Options struct {
	// OpLatency is how long an operation stays RUNNING. While it runs, other
	// mutations of the same policy fail with resourceNotReady. 0 means the
	// mutating call answers RUNNING and the next poll answers DONE.
	OpLatency time.Duration
	// WaitTimeout caps operations.wait; GCP uses about 2 minutes.
	WaitTimeout time.Duration
	// Auth is AuthRequire (default), AuthAny or AuthToken.
	Auth string
	// Token is the only bearer token accepted when Auth is AuthToken.
	Token string
	// Grants, if not empty, limits each bearer token to the projects its
	// Grant lists; a token without a Grant may touch no project. Denied calls
	// get GCP's 403 forbidden. Empty: every accepted token may do everything.
	Grants map[string]Grant
	// User is reported as the operations' user.
	User string
	// StateFile, if set, is loaded at start and rewritten after each mutation.
	StateFile string
	// Seed makes ids, names, fingerprints and fault decisions reproducible.
	// 0 picks a random seed.
	Seed uint64
	// Faults is the initial fault configuration (see SetFaults).
	Faults Faults
	// MaxBodyBytes bounds request bodies; default 4 MiB.
	MaxBodyBytes int64
	// DefaultTier is the Cloud Armor tier of every project whose tier was
	// not set (setCloudArmorTier, SetTier): TierStandard, TierEnterprisePaygo
	// or TierEnterpriseAnnual. "" means TierStandard, GCP's default. Rules
	// that use address groups need an Enterprise tier.
	DefaultTier string
	// Logf, if set, receives one line per mutation ("<method> <policy or
	// address group> operation=<name>") and one per write the API refused
	// ("<method> <path> refused=<status> reason=<reason> message=<message>").
	Logf func(format string, args ...any)
}

// Faults configure injected failures. Rules in Methods replace Global for the
// named methods (e.g. "securityPolicies.get", "regionSecurityPolicies.patchRule").
type Faults struct {
	Global  FaultRule            `json:"global"`
	Methods map[string]FaultRule `json:"methods,omitempty"`
	Quota   Quota                `json:"quota"`
	// RetryAfterSeconds is sent with injected 429s; default 1.
	RetryAfterSeconds int `json:"retryAfterSeconds,omitempty"`
}

// A FaultRule describes the faults of one method (or all of them).
type FaultRule struct {
	// ErrorRate is the fraction (0..1) of requests answered with an error
	// picked from ErrorCodes (default 429, 500, 503) before they reach the API.
	ErrorRate  float64 `json:"errorRate,omitempty"`
	ErrorCodes []int   `json:"errorCodes,omitempty"`
	// Latency is added to every matching request.
	Latency Duration `json:"latency,omitempty"`
	// OpErrorRate is the fraction (0..1) of mutations whose operation
	// finishes DONE with an error, without changing anything.
	OpErrorRate float64 `json:"opErrorRate,omitempty"`
}

// Quota is the per-project quota; 0 means unlimited. Exceeding it makes the
// operation finish with QUOTA_EXCEEDED, as GCP does.
type Quota struct {
	Policies int `json:"policies,omitempty"`
	Rules    int `json:"rules,omitempty"`
}

// Duration is a time.Duration that reads "150ms" or nanoseconds in JSON.
type Duration time.Duration

// MarshalJSON writes the duration as a Go duration string.
func (d Duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON accepts "150ms" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	s := strings.Trim(string(b), `"`)
	if v, err := time.ParseDuration(s); err == nil {
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("invalid duration %s", b)
	}
	*d = Duration(n)
	return nil
}

func (o Options) withDefaults() Options {
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = 2 * time.Minute
	}
	if o.Auth == "" {
		o.Auth = AuthRequire
	}
	if o.User == "" {
		o.User = "emulator@cloudarmor.local"
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 4 << 20
	}
	return o
}

func (o Options) validate() error {
	switch o.Auth {
	case AuthRequire, AuthAny:
	case AuthToken:
		if o.Token == "" {
			return fmt.Errorf("auth mode %q needs a token", AuthToken)
		}
	default:
		return fmt.Errorf("unknown auth mode %q (want require, any or token)", o.Auth)
	}
	if err := validateGrants(o.Grants); err != nil {
		return err
	}
	if o.DefaultTier != "" {
		if err := securitypolicies.CheckTier(o.DefaultTier); err != nil {
			return err
		}
	}
	return o.Faults.validate()
}

func (f Faults) validate() error {
	rules := map[string]FaultRule{"global": f.Global}
	for m, r := range f.Methods {
		rules[m] = r
	}
	for name, r := range rules {
		if r.ErrorRate < 0 || r.ErrorRate > 1 || r.OpErrorRate < 0 || r.OpErrorRate > 1 {
			return fmt.Errorf("fault rule %s: rates must be within 0..1", name)
		}
		for _, c := range r.ErrorCodes {
			if c != 429 && c != 500 && c != 503 {
				return fmt.Errorf("fault rule %s: error code %d is not one of 429, 500, 503", name, c)
			}
		}
	}
	if f.Quota.Policies < 0 || f.Quota.Rules < 0 {
		return fmt.Errorf("quota must not be negative")
	}
	return nil
}
