//go:build bench

// Command bench measures the provider at scale against its physical limit:
// it starts a real kube-apiserver and etcd, the Cloud Armor emulator (with an
// operation latency and per-policy serialisation, like GCP) and the built
// provider binary as its own process, then creates P policies with R rules
// each, waits until everything is Ready, watches a steady-state window of
// several poll intervals, changes 10% of the rules and deletes everything.
//
// It prints one table (figure, value, target, pass/fail), writes the same as
// JSON to OUT/bench.json and draws OUT/bench.svg. Run it with `make bench`,
// or:
//
//	make build tools
//	KUBEBUILDER_ASSETS=... go run -tags bench ./test/bench -policies 10 -rules 100
//
// It is behind the bench build tag so that `go test ./...` and `go vet ./...`
// neither build nor run it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// config holds the command line.
type config struct {
	policies        int
	rules           int
	latency         time.Duration
	poll            time.Duration
	steadyPolls     int
	variants        string
	floor           bool
	floorOnly       bool
	limits          bool
	growth          bool
	growthRules     string
	growthPols      string
	growthInline    int
	growthPoll      time.Duration
	growthPolls     int
	platform        bool
	fleet           bool
	fleetClusters   int
	fleetNodes      int
	fleetInstances  int
	fleetSim        bool
	simClusters     int
	simNodes        int
	simPerNamespace int
	simBeat         time.Duration
	simWindow       time.Duration
	scale           string
	doc             string
	binDir          string
	outDir          string
	crds            string
	providerArgs    string
	providerEnv     string
	profile         bool
	render          string
	timeout         time.Duration
}

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.IntVar(&c.policies, "policies", 10, "P: number of policies")
	fs.IntVar(&c.rules, "rules", 100, "R: rules per policy")
	fs.DurationVar(&c.latency, "latency", 100*time.Millisecond, "emulator operation latency (how long each GCP operation runs)")
	fs.DurationVar(&c.poll, "poll", 20*time.Second, "the provider's --poll interval")
	fs.IntVar(&c.steadyPolls, "steady-polls", 3, "length of the steady-state window, in poll intervals")
	fs.StringVar(&c.variants, "variants", "rules,inline", "comma-separated: rules (SecurityPolicyRule objects), inline (rules inline in the SecurityPolicy)")
	fs.BoolVar(&c.floor, "floor", true, "run the null provider (the floor: Crossplane's reconciler, no GCP) on each variant's workload first and report ours ÷ floor")
	fs.BoolVar(&c.floorOnly, "floor-only", false, "run only the floor of each variant (with -floor), not the provider")
	fs.BoolVar(&c.limits, "limits", true, "also run P=1,R=1000 (GCP's serial limit is the bottleneck) and P=100,R=10 (rule objects)")
	fs.BoolVar(&c.growth, "growth", true, "run the growth curve: rule objects over 10 policies (-growth-rules) and policies with inline rules (-growth-policies)")
	fs.StringVar(&c.growthRules, "growth-rules", "0,1000,2500,5000", "growth curve: total SecurityPolicyRule objects, over 10 policies")
	fs.StringVar(&c.growthPols, "growth-policies", "10,100,500", "growth curve: policies with inline rules")
	fs.IntVar(&c.growthInline, "growth-inline-rules", 10, "growth curve: inline rules per policy")
	fs.DurationVar(&c.growthPoll, "growth-poll", time.Minute, "growth curve: the provider's --poll (the default's, so steady CPU is what a user sees)")
	fs.IntVar(&c.growthPolls, "growth-steady-polls", 2, "growth curve: steady-state window, in poll intervals")
	fs.BoolVar(&c.fleet, "fleet", true, "measure remote sources: heap per remote cluster and per 1,000 remote Nodes, CPU at the kubelets' report rate, Compute calls per poll")
	fs.IntVar(&c.fleetClusters, "fleet-clusters", 4, "remote clusters (each its own kube-apiserver and etcd), with -fleet")
	fs.IntVar(&c.fleetNodes, "fleet-nodes", 1000, "Nodes per remote cluster, with -fleet")
	fs.IntVar(&c.fleetInstances, "fleet-instances", 1000, "emulated instances (half selected), with -fleet")
	fs.BoolVar(&c.fleetSim, "fleet-sim", true, "measure remote sources at scale, simulated: many remote clusters of realistic GKE Nodes served by one fake API server; the provider's peak RSS and CPU per 1,000 remote Nodes")
	fs.IntVar(&c.simClusters, "fleet-sim-clusters", 100, "simulated remote clusters, one AddressSet each, with -fleet-sim")
	fs.IntVar(&c.simNodes, "fleet-sim-nodes", 1000, "Nodes per simulated remote cluster, with -fleet-sim")
	fs.IntVar(&c.simPerNamespace, "fleet-sim-per-namespace", 20, "simulated clusters per namespace (at most the provider's --max-remote-clusters-per-namespace), with -fleet-sim")
	fs.DurationVar(&c.simBeat, "fleet-sim-heartbeat", kubeletReportEvery, "how often each simulated Node's status is written (the kubelets' default: 5m; shorter for a harder load), with -fleet-sim")
	fs.DurationVar(&c.simWindow, "fleet-sim-window", time.Minute, "CPU window, quiet and with heartbeats, with -fleet-sim")
	fs.BoolVar(&c.platform, "platform", true, "run the live composition suite (test/platform) last and print its node-change latency table")
	fs.StringVar(&c.scale, "platform-scale", "1000,5000", "Node counts for the IPAllowlist at scale (test/platform TestScale, with -platform); empty skips it")
	fs.StringVar(&c.doc, "doc", "docs/performance.md", "where the last committed figures are (read from git HEAD, else the file)")
	fs.StringVar(&c.binDir, "bin-dir", "_output/bin", "folder holding the built provider and nullprovider binaries")
	fs.StringVar(&c.outDir, "out", "_output", "where bench.json, bench.svg and logs go")
	fs.StringVar(&c.crds, "crds", "package/crds", "folder of CRDs to install")
	fs.StringVar(&c.providerArgs, "provider-args", "", "extra flags for the provider, space-separated")
	fs.StringVar(&c.providerEnv, "provider-env", "", "extra environment for the provider (not the floor), space-separated KEY=VALUE")
	fs.BoolVar(&c.profile, "profile", false, "expose the provider's pprof and save CPU (convergence) and heap (steady state) profiles to OUT/bench-pprof; profiling the API server slows convergence about 3× (55 s against 16 s for 1,000 rule objects), so take timings from a run without it")
	fs.StringVar(&c.render, "render", "", "run nothing: recompute the tables of a saved bench.json (its runs may come from several), print them and write OUT/bench.json and OUT/bench.svg")
	fs.DurationVar(&c.timeout, "phase-timeout", 10*time.Minute, "give up on a phase after this long")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.fleet && (c.fleetClusters < 1 || c.fleetNodes < 0 || c.fleetInstances < 0) {
		return c, fmt.Errorf("-fleet-clusters must be at least 1, -fleet-nodes and -fleet-instances at least 0")
	}
	if c.fleetSim && (c.simClusters < 1 || c.simNodes < 0 || c.simPerNamespace < 1 || c.simBeat <= 0 || c.simWindow <= 0) {
		return c, fmt.Errorf("-fleet-sim-clusters and -fleet-sim-per-namespace must be at least 1, -fleet-sim-nodes at least 0, -fleet-sim-heartbeat and -fleet-sim-window positive")
	}
	if c.policies < 1 || c.rules < 1 || c.steadyPolls < 1 || c.growthPolls < 1 {
		return c, fmt.Errorf("-policies, -rules and -steady-polls must be at least 1")
	}
	if _, err := ints(c.growthRules); err != nil {
		return c, fmt.Errorf("-growth-rules: %w", err)
	}
	if _, err := ints(c.growthPols); err != nil {
		return c, fmt.Errorf("-growth-policies: %w", err)
	}
	return c, nil
}

func ints(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 {
			return nil, fmt.Errorf("%q is not a count", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// Growth curves.
const (
	curveRules    = "rules"
	curvePolicies = "policies"
	// growthPolicies is how many policies the rule objects are spread over.
	growthPolicies = 10
)

// A scenario is one benchmark run: a scale and a way of writing rules.
type scenario struct {
	Name     string `json:"name"`
	Policies int    `json:"policies"`
	Rules    int    `json:"rulesPerPolicy"`
	Inline   bool   `json:"inline"`
	// Main marks the variants the floor ratio applies to.
	Main bool `json:"main"`
	// Null runs the null provider: convergence only, no GCP.
	Null bool `json:"null,omitempty"`
	// Curve names the growth curve this run is a point of: converge and
	// steady state only.
	Curve string `json:"curve,omitempty"`
	// Poll and SteadyPolls are the provider's --poll and the steady window.
	Poll        time.Duration `json:"poll"`
	SteadyPolls int           `json:"steadyPolls"`
}

// objects is how many managed resources the scenario creates.
func (s scenario) objects() int {
	if s.Inline {
		return s.Policies
	}
	return s.Policies * (s.Rules + 1)
}

// ruleObjects is how many SecurityPolicyRule objects it creates.
func (s scenario) ruleObjects() int {
	if s.Inline {
		return 0
	}
	return s.Policies * s.Rules
}

func scenarios(c config) []scenario {
	var out []scenario
	add := func(s scenario) {
		if s.Poll == 0 {
			s.Poll, s.SteadyPolls = c.poll, c.steadyPolls
		}
		out = append(out, s)
	}
	for _, v := range strings.Split(c.variants, ",") {
		var s scenario
		switch strings.TrimSpace(v) {
		case "rules":
			s = scenario{Name: fmt.Sprintf("rules P=%d R=%d", c.policies, c.rules), Policies: c.policies, Rules: c.rules, Main: true}
		case "inline":
			s = scenario{Name: fmt.Sprintf("inline P=%d R=%d", c.policies, c.rules), Policies: c.policies, Rules: c.rules, Inline: true, Main: true}
		default:
			continue
		}
		if c.floor {
			// The floor first, on the same workload.
			f := s
			f.Name, f.Main, f.Null = "floor "+s.Name, false, true
			add(f)
		}
		if c.floor && c.floorOnly {
			continue
		}
		add(s)
	}
	if c.limits {
		for _, s := range [][2]int{{1, 1000}, {100, 10}} {
			if s[0] == c.policies && s[1] == c.rules {
				continue
			}
			add(scenario{Name: fmt.Sprintf("rules P=%d R=%d", s[0], s[1]), Policies: s[0], Rules: s[1]})
		}
	}
	if c.growth {
		rs, _ := ints(c.growthRules)
		for _, n := range rs {
			add(scenario{Name: fmt.Sprintf("growth %d rule objects", n), Policies: growthPolicies, Rules: n / growthPolicies,
				Curve: curveRules, Poll: c.growthPoll, SteadyPolls: c.growthPolls})
		}
		ps, _ := ints(c.growthPols)
		for _, n := range ps {
			if n < 1 {
				continue
			}
			add(scenario{Name: fmt.Sprintf("growth %d inline policies", n), Policies: n, Rules: c.growthInline, Inline: true,
				Curve: curvePolicies, Poll: c.growthPoll, SteadyPolls: c.growthPolls})
		}
	}
	return out
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		os.Exit(2)
	}
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, cfg config) error {
	if cfg.render != "" {
		return render(cfg)
	}
	bin, err := filepath.Abs(filepath.Join(cfg.binDir, "provider"))
	if err != nil {
		return err
	}
	nullBin, err := filepath.Abs(filepath.Join(cfg.binDir, "nullprovider"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("no provider binary (run `make build`): %w", err)
	}
	if _, err := os.Stat(nullBin); cfg.floor && err != nil {
		return fmt.Errorf("no nullprovider binary (go build -tags bench -o %s ./test/bench/nullprovider): %w", nullBin, err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.outDir, "bench-logs"), 0o755); err != nil {
		return err
	}
	rep := &report{Started: time.Now().UTC(), Config: reportConfig{
		Latency: cfg.latency.String(), Poll: cfg.poll.String(), SteadyPolls: cfg.steadyPolls,
		GrowthPoll: cfg.growthPoll.String(), GrowthSteadyPolls: cfg.growthPolls,
		ProviderArgs: cfg.providerArgs, CPUs: numCPU()}}
	rep.LoadBefore = loadAvg()
	for _, sc := range scenarios(cfg) {
		fmt.Fprintf(os.Stderr, ">> %s (load average %s)\n", sc.Name, loadAvg())
		b := bin
		if sc.Null {
			b = nullBin
		}
		res, err := runScenario(ctx, cfg, b, sc)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.Name, err)
		}
		rep.Runs = append(rep.Runs, res)
		// Keep what was measured if a later, larger point fails.
		_ = rep.writeJSON(filepath.Join(cfg.outDir, "bench.json"))
	}
	rep.compare()
	rep.curve()
	rep.targets(lastFigures(cfg.doc))
	if cfg.fleet {
		fmt.Fprintf(os.Stderr, ">> fleet: %d remote clusters of %d Nodes, %d instances (load average %s)\n", cfg.fleetClusters, cfg.fleetNodes, cfg.fleetInstances, loadAvg())
		f, err := runFleet(ctx, cfg, bin)
		if err != nil {
			f = &fleetReport{Clusters: cfg.fleetClusters, NodesPerCluster: cfg.fleetNodes, Err: err.Error()}
		}
		rep.Fleet = f
	}
	if cfg.fleetSim {
		fmt.Fprintf(os.Stderr, ">> fleet-sim: %d simulated remote clusters of %d Nodes (load average %s)\n", cfg.simClusters, cfg.simNodes, loadAvg())
		f, err := runFleetSim(ctx, cfg, bin)
		if err != nil {
			f.Err = err.Error()
		}
		rep.FleetSim = f
		_ = rep.writeJSON(filepath.Join(cfg.outDir, "bench.json"))
	}
	// After every run of this process, the fleet's included.
	rep.LoadAfter = loadAvg()
	if cfg.platform {
		rep.Platform, rep.PlatformErr = runPlatform(ctx, cfg.outDir, cfg.scale)
	}
	rep.printTable(os.Stdout)
	if err := rep.writeJSON(filepath.Join(cfg.outDir, "bench.json")); err != nil {
		return err
	}
	if err := rep.writeSVG(filepath.Join(cfg.outDir, "bench.svg")); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s and %s\n", filepath.Join(cfg.outDir, "bench.json"), filepath.Join(cfg.outDir, "bench.svg"))
	// Missed targets are reported, not failed on: the figures depend on
	// the machine and on what else runs on it.
	return nil
}

// render prints and draws a saved report.
func render(cfg config) error {
	b, err := os.ReadFile(cfg.render)
	if err != nil {
		return err
	}
	rep := &report{}
	if err := json.Unmarshal(b, rep); err != nil {
		return fmt.Errorf("%s: %w", cfg.render, err)
	}
	// Recomputed from the runs, so runs of several reports can be merged.
	rep.Floor, rep.Curve, rep.Targets = nil, nil, nil
	rep.compare()
	rep.curve()
	rep.targets(lastFigures(cfg.doc))
	rep.printTable(os.Stdout)
	if err := os.MkdirAll(cfg.outDir, 0o755); err != nil {
		return err
	}
	if err := rep.writeJSON(filepath.Join(cfg.outDir, "bench.json")); err != nil {
		return err
	}
	return rep.writeSVG(filepath.Join(cfg.outDir, "bench.svg"))
}
