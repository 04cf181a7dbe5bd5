// Command emulator serves a local Cloud Armor API: Compute Engine v1 security
// policies and project tiers, and networksecurity v1 address groups. See
// docs/emulator.md.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/dataplane"
)

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	opts, sf, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if err := run(sf, opts); err != nil {
		log.Fatal(err)
	}
}

// serveFlags say where the emulator serves.
type serveFlags struct {
	addr      string
	dataPlane dataPlaneFlags
}

// dataPlaneFlags configure the data plane (package dataplane); addr ""
// serves none.
type dataPlaneFlags struct {
	addr          string
	trustClientIP bool
}

func parseFlags(args []string) (emulator.Options, serveFlags, error) {
	fs := flag.NewFlagSet("emulator", flag.ContinueOnError)
	var o emulator.Options
	var sf serveFlags
	fs.StringVar(&sf.addr, "listen", "127.0.0.1:8085", "address to serve on")
	fs.StringVar(&sf.dataPlane.addr, "data-plane", "", "also serve the data plane on this address: requests to Host <backend>.<project>.backend.local "+
		"answered as the backend service's security policy decides (see docs/evaluation.md)")
	fs.BoolVar(&sf.dataPlane.trustClientIP, "data-plane-trust-client-ip-header", false, "let the data plane take the client address from "+
		dataplane.ClientIPHeader+" (demos, tests); otherwise it is the connection's")
	fs.DurationVar(&o.OpLatency, "op-latency", 0, "how long operations stay RUNNING (0: DONE on the next poll)")
	fs.DurationVar(&o.WaitTimeout, "wait-timeout", 2*time.Minute, "longest time operations.wait blocks")
	fs.StringVar(&o.Auth, "auth", emulator.AuthRequire, "auth mode: require (any bearer token), any (none needed), token (only --token)")
	fs.StringVar(&o.Token, "token", "", "the bearer token accepted with --auth=token")
	fs.StringVar(&o.StateFile, "state-file", "", "load state from and save it to this file")
	fs.Uint64Var(&o.Seed, "seed", 0, "seed for ids and fault decisions (0: random)")
	fs.StringVar(&o.User, "user", "", "user reported in operations")
	rate := fs.Float64("fault-rate", 0, "fraction (0..1) of API calls failed with an injected error")
	codes := fs.String("fault-codes", "429,500,503", "comma-separated status codes for injected errors")
	methods := fs.String("fault-methods", "", "comma-separated methods the faults apply to, e.g. securityPolicies.get (empty: all)")
	latency := fs.Duration("latency", 0, "latency added to every API call")
	opErr := fs.Float64("op-error-rate", 0, "fraction (0..1) of operations that finish DONE with an error")
	retry := fs.Int("retry-after", 1, "Retry-After seconds sent with injected 429s")
	fs.IntVar(&o.Faults.Quota.Policies, "quota-policies", 0, "per-project SECURITY_POLICIES quota (0: unlimited)")
	fs.IntVar(&o.Faults.Quota.Rules, "quota-rules", 0, "per-project SECURITY_POLICY_RULES quota (0: unlimited)")
	fs.StringVar(&o.DefaultTier, "default-tier", "", "Cloud Armor tier of projects not set with setCloudArmorTier: CA_STANDARD (default), CA_ENTERPRISE_PAYGO or CA_ENTERPRISE_ANNUAL")
	grantsFile := fs.String("grants-file", "", `JSON file of per-token project grants: {"TOKEN": {"read": ["PROJECT"], "write": ["PROJECT"]}}`)
	var grants grantFlags
	fs.Var(&grants, "grant", `TOKEN=PROJECT:r or TOKEN=PROJECT:rw (repeatable): TOKEN may read, or read and write, PROJECT ("*": any)`)
	if err := fs.Parse(args); err != nil {
		return o, sf, err
	}
	rule := emulator.FaultRule{ErrorRate: *rate, Latency: emulator.Duration(*latency), OpErrorRate: *opErr}
	var err error
	if rule.ErrorCodes, err = parseCodes(*codes); err != nil {
		return o, sf, err
	}
	if o.Grants, err = loadGrants(*grantsFile, grants); err != nil {
		return o, sf, err
	}
	o.Faults.RetryAfterSeconds = *retry
	if *methods == "" {
		o.Faults.Global = rule
	} else {
		o.Faults.Methods = map[string]emulator.FaultRule{}
		for _, m := range strings.Split(*methods, ",") {
			o.Faults.Methods[strings.TrimSpace(m)] = rule
		}
	}
	o.Logf = log.Printf
	return o, sf, nil
}

func parseCodes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil {
			return nil, fmt.Errorf("invalid --fault-codes entry %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// grantFlags collects repeated --grant flags.
type grantFlags []grantFlag

type grantFlag struct {
	token, project string
	write          bool
}

func (g *grantFlags) String() string { return "" }

// Set parses TOKEN=PROJECT:MODE. It splits at the last "=" and the last ":"
// because tokens may end in base64 "=" padding and domain-scoped project ids
// contain ":" (example.com:proj), while projects never contain "=".
func (g *grantFlags) Set(v string) error {
	eq, colon := strings.LastIndex(v, "="), strings.LastIndex(v, ":")
	if eq <= 0 || colon <= eq+1 {
		return fmt.Errorf("want TOKEN=PROJECT:r or TOKEN=PROJECT:rw, got %q", v)
	}
	f := grantFlag{token: v[:eq], project: v[eq+1 : colon]}
	switch v[colon+1:] {
	case "r":
	case "rw":
		f.write = true
	default:
		return fmt.Errorf("mode of %q must be r or rw", v)
	}
	*g = append(*g, f)
	return nil
}

// loadGrants reads the grants file, if any, and adds the --grant flags to it.
// It returns nil when there are no grants, which leaves every token unlimited.
func loadGrants(file string, flags grantFlags) (map[string]emulator.Grant, error) {
	grants := map[string]emulator.Grant{}
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--grants-file: %w", err)
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields() // a typo like "writes" must not silently grant nothing
		if err := dec.Decode(&grants); err != nil {
			return nil, fmt.Errorf("--grants-file %s: %w", file, err)
		}
	}
	if grants == nil { // the file said null
		grants = map[string]emulator.Grant{}
	}
	for _, f := range flags {
		g := grants[f.token]
		if f.write {
			g.Write = append(g.Write, f.project) // write implies read
		} else {
			g.Read = append(g.Read, f.project)
		}
		grants[f.token] = g
	}
	if len(grants) == 0 {
		return nil, nil
	}
	return grants, nil
}

func run(sf serveFlags, opts emulator.Options) error {
	r, err := emulator.Listen(sf.addr, opts)
	if err != nil {
		return err
	}
	log.Printf("Cloud Armor emulator listening on %s (endpoint %s, auth %s, op latency %s)",
		r.URL(), r.Endpoint(), authName(opts.Auth), opts.OpLatency)
	if len(opts.Grants) > 0 {
		log.Printf("project grants limit %d tokens; other tokens get 403", len(opts.Grants))
	}
	dp, err := serveDataPlane(sf.dataPlane, r.Server)
	if err != nil {
		_ = r.Close()
		return err
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	<-sig
	log.Print("shutting down")
	if dp != nil {
		_ = dp.Close()
	}
	if err := r.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// serveDataPlane starts the data plane over s when f asks for one.
func serveDataPlane(f dataPlaneFlags, s *emulator.Server) (*dataplane.Running, error) {
	if f.addr == "" {
		return nil, nil
	}
	dp, err := dataplane.Listen(f.addr, s, dataplane.Options{TrustClientIPHeader: f.trustClientIP, Logf: log.Printf})
	if err != nil {
		return nil, fmt.Errorf("--data-plane: %w", err)
	}
	log.Printf("data plane listening on %s (Host <backend>.<project>%s; %s trusted: %t)",
		dp.Addr(), dataplane.HostSuffix, dataplane.ClientIPHeader, f.trustClientIP)
	return dp, nil
}

func authName(a string) string {
	if a == "" {
		return emulator.AuthRequire
	}
	return a
}
