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
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// config holds the command line.
type config struct {
	policies     int
	rules        int
	latency      time.Duration
	poll         time.Duration
	steadyPolls  int
	variants     string
	growth       bool
	binDir       string
	outDir       string
	crds         string
	providerArgs string
	profile      bool
	timeout      time.Duration
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
	fs.BoolVar(&c.growth, "growth", true, "also run P=1,R=1000 and P=100,R=10 (rule objects) and report how cost grows")
	fs.StringVar(&c.binDir, "bin-dir", "_output/bin", "folder holding the built provider binary")
	fs.StringVar(&c.outDir, "out", "_output", "where bench.json, bench.svg and logs go")
	fs.StringVar(&c.crds, "crds", "package/crds", "folder of CRDs to install")
	fs.StringVar(&c.providerArgs, "provider-args", "", "extra flags for the provider, space-separated")
	fs.BoolVar(&c.profile, "profile", false, "expose the provider's pprof and save CPU (convergence) and heap (steady state) profiles to OUT/bench-pprof")
	fs.DurationVar(&c.timeout, "phase-timeout", 10*time.Minute, "give up on a phase after this long")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if c.policies < 1 || c.rules < 1 || c.steadyPolls < 1 {
		return c, fmt.Errorf("-policies, -rules and -steady-polls must be at least 1")
	}
	return c, nil
}

// A scenario is one benchmark run: a scale and a way of writing rules.
type scenario struct {
	Name     string `json:"name"`
	Policies int    `json:"policies"`
	Rules    int    `json:"rulesPerPolicy"`
	Inline   bool   `json:"inline"`
	// Main marks the scenario the memory target applies to.
	Main bool `json:"main"`
}

func scenarios(c config) []scenario {
	var out []scenario
	for _, v := range strings.Split(c.variants, ",") {
		switch strings.TrimSpace(v) {
		case "rules":
			out = append(out, scenario{Name: fmt.Sprintf("rules P=%d R=%d", c.policies, c.rules), Policies: c.policies, Rules: c.rules, Main: true})
		case "inline":
			out = append(out, scenario{Name: fmt.Sprintf("inline P=%d R=%d", c.policies, c.rules), Policies: c.policies, Rules: c.rules, Inline: true, Main: true})
		}
	}
	if c.growth {
		for _, s := range [][2]int{{1, 1000}, {100, 10}} {
			if s[0] == c.policies && s[1] == c.rules {
				continue
			}
			out = append(out, scenario{Name: fmt.Sprintf("rules P=%d R=%d", s[0], s[1]), Policies: s[0], Rules: s[1]})
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
	bin, err := filepath.Abs(filepath.Join(cfg.binDir, "provider"))
	if err != nil {
		return err
	}
	if _, err := os.Stat(bin); err != nil {
		return fmt.Errorf("no provider binary (run `make build`): %w", err)
	}
	if err := os.MkdirAll(filepath.Join(cfg.outDir, "bench-logs"), 0o755); err != nil {
		return err
	}
	rep := &report{Started: time.Now().UTC(), Config: reportConfig{
		Latency: cfg.latency.String(), Poll: cfg.poll.String(), SteadyPolls: cfg.steadyPolls,
		ProviderArgs: cfg.providerArgs, CPUs: numCPU()}}
	rep.LoadBefore = loadAvg()
	failed := false
	for _, sc := range scenarios(cfg) {
		fmt.Fprintf(os.Stderr, ">> %s\n", sc.Name)
		res, err := runScenario(ctx, cfg, bin, sc)
		if err != nil {
			return fmt.Errorf("%s: %w", sc.Name, err)
		}
		rep.Runs = append(rep.Runs, res)
	}
	rep.LoadAfter = loadAvg()
	rep.growth()
	for _, r := range rep.Runs {
		for _, f := range r.Figures {
			if f.Pass != nil && !*f.Pass {
				failed = true
			}
		}
	}
	rep.printTable(os.Stdout)
	if err := rep.writeJSON(filepath.Join(cfg.outDir, "bench.json")); err != nil {
		return err
	}
	if err := rep.writeSVG(filepath.Join(cfg.outDir, "bench.svg")); err != nil {
		return err
	}
	fmt.Printf("\nwrote %s and %s\n", filepath.Join(cfg.outDir, "bench.json"), filepath.Join(cfg.outDir, "bench.svg"))
	if failed {
		return fmt.Errorf("some targets were missed")
	}
	return nil
}
