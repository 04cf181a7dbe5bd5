//go:build bench

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// The project's performance targets (docs/performance.md). They are
// measured and printed, never failed on: every figure here depends on the
// machine and on what else runs on it.
const (
	targetFloorRatio       = 1.15 // convergence ÷ the null provider's
	targetSerialRatio      = 1.1  // convergence ÷ R × latency where GCP is the bottleneck
	targetAnonMiB          = 24.0 // RssAnon steady at 1,000 rule objects
	targetAnonPer1000MiB   = 8.0  // RssAnon per further 1,000 rule objects
	targetPeakMiB          = 64.0 // VmHWM at 1,000 rule objects
	targetSteadyCores      = 0.02 // steady CPU at 1,000 rule objects, --poll=1m
	targetReadsPerPoll     = 1.0  // steady GCP reads per policy per poll
	targetWritesPerObject  = 1.0  // GCP writes per object created
	targetReadsPerObject   = 2.0  // GCP reads per object created
	targetObjectsAt        = 1000 // the rule-object count the memory and CPU targets name
	serialPolicies         = 1
	serialRulesPerPolicies = 1000
)

// A figure is one row of a run's table.
type figure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit,omitempty"`
	Target string  `json:"target,omitempty"`
	// Pass is nil for figures without a target.
	Pass *bool `json:"pass,omitempty"`
}

type reportConfig struct {
	Latency           string `json:"opLatency"`
	Poll              string `json:"poll"`
	SteadyPolls       int    `json:"steadyPolls"`
	GrowthPoll        string `json:"growthPoll"`
	GrowthSteadyPolls int    `json:"growthSteadyPolls"`
	ProviderArgs      string `json:"providerArgs,omitempty"`
	CPUs              int    `json:"cpus"`
}

// floorRow compares a variant with the null provider on the same workload.
type floorRow struct {
	Scenario string `json:"scenario"`
	// Ours and Floor: apply to all Ready (s), the provider's API server
	// writes per object, kube-apiserver + etcd CPU (s).
	ConvergeOurs, ConvergeFloor float64
	WritesOurs, WritesFloor     float64
	APICPUOurs, APICPUFloor     float64
	ConflictsOurs, ConflictsFlr float64
}

// A curvePoint is one point of a growth curve.
type curvePoint struct {
	Curve    string `json:"curve"` // curveRules or curvePolicies
	X        int    `json:"x"`     // rule objects, or policies
	Policies int    `json:"policies"`
	Rules    int    `json:"rulesPerPolicy"`
	// ConvergeS is apply to all Ready.
	ConvergeS float64 `json:"convergeSeconds"`
	// ReadsPerPoll are the steady GCP reads per poll interval, in all and
	// per policy.
	ReadsPerPoll          float64 `json:"readsPerPoll"`
	ReadsPerPolicyPerPoll float64 `json:"readsPerPolicyPerPoll"`
	AnonMiB               float64 `json:"rssAnonMiB"`
	FileMiB               float64 `json:"rssFileMiB"`
	HWMMiB                float64 `json:"vmHWMMiB"`
	SteadyCores           float64 `json:"steadyCores"`
	// APIWrites are the API server writes while converging, the
	// benchmark's own creates included.
	APIWrites float64 `json:"apiWrites"`
	// APIWritesPerObject are the provider's writes per object created.
	APIWritesPerObject float64 `json:"apiWritesPerObject"`
	Load               string  `json:"loadAverage"`
}

// A target is one of the project's targets and what this run reached.
type target struct {
	ID    string   `json:"id"`
	Name  string   `json:"name"`
	Goal  string   `json:"goal"`
	Value float64  `json:"value"`
	Unit  string   `json:"unit,omitempty"`
	Pass  bool     `json:"pass"`
	Last  *float64 `json:"lastCommitted,omitempty"`
	From  string   `json:"from"` // the run it comes from
}

type report struct {
	Started     time.Time       `json:"started"`
	Config      reportConfig    `json:"config"`
	LoadBefore  string          `json:"loadAverageBefore"`
	LoadAfter   string          `json:"loadAverageAfter"`
	Runs        []*result       `json:"runs"`
	Floor       []floorRow      `json:"floor,omitempty"`
	Curve       []curvePoint    `json:"growth,omitempty"`
	Targets     []target        `json:"targets,omitempty"`
	Fleet       *fleetReport    `json:"fleet,omitempty"`
	FleetSim    *fleetSimReport `json:"fleetSim,omitempty"`
	Platform    string          `json:"platformLatency,omitempty"`
	PlatformErr string          `json:"platformError,omitempty"`
}

func pass(ok bool) *bool { return &ok }

func (r *result) phase(name string) phase {
	for _, p := range r.Phases {
		if p.Name == name {
			return p
		}
	}
	return phase{}
}

// last is the run's last phase: VmHWM there is the run's peak.
func (r *result) last() phase {
	if len(r.Phases) == 0 {
		return phase{}
	}
	return r.Phases[len(r.Phases)-1]
}

func readsOf(m map[string]int64) int64 {
	return m["securityPolicies.get"] + m["regionSecurityPolicies.get"]
}

func opPollsOf(m map[string]int64) int64 {
	var n int64
	for k, v := range m {
		if strings.HasPrefix(k, "globalOperations.") || strings.HasPrefix(k, "regionOperations.") {
			n += v
		}
	}
	return n
}

func writesOf(p phase) int64 { return p.Calls - readsOf(p.Methods) - opPollsOf(p.Methods) }

// apiWritesPerObject are the API server writes per object created that
// are not the benchmark's own create.
func apiWritesPerObject(sc scenario, p phase) float64 {
	o := float64(sc.objects())
	return (float64(p.API.writes()) - o) / o
}

// polls is how many poll intervals the steady phase lasted.
func polls(sc scenario, steady phase) float64 { return steady.Seconds / sc.Poll.Seconds() }

func readsPerPolicyPerPoll(sc scenario, steady phase) float64 {
	return float64(readsOf(steady.Methods)) / float64(sc.Policies) / polls(sc, steady)
}

// figures computes a run's table rows; a phase the run skipped has none.
func figures(sc scenario, res *result, changedRules int) []figure {
	conv, steady, change, del := res.phase("converge"), res.phase("steady"), res.phase("change"), res.phase("delete")
	rules := float64(sc.Policies * sc.Rules)
	objects := float64(sc.objects())
	f := []figure{
		{Name: "converge: apply to all Ready", Value: conv.Seconds, Unit: "s"},
		// The benchmark itself creates each object once; the rest are the
		// provider's writes (updates, status updates, events, usages).
		{Name: "converge: API server writes per object (provider's)", Value: apiWritesPerObject(sc, conv)},
		{Name: "converge: API server write conflicts (409)", Value: float64(conv.API.Conflicts)},
		{Name: "converge: watches the API server closed on a slow client", Value: float64(conv.API.terminated())},
		{Name: "converge: kube-apiserver + etcd CPU", Value: conv.ControlPlaneCPU, Unit: "s"},
		{Name: "converge: provider CPU", Value: conv.CPU, Unit: "s"},
		{Name: "converge: machine CPU in use", Value: conv.MachineCPU / conv.Seconds, Unit: fmt.Sprintf("cores of %d", numCPU())},
	}
	if sc.Null {
		return f
	}
	if rules > 0 {
		ratio := conv.Seconds / res.LimitSeconds
		fr := figure{Name: "converge: ratio to GCP's serial limit R × latency", Value: ratio, Unit: "×"}
		if sc.Policies == serialPolicies && sc.Rules == serialRulesPerPolicies {
			fr.Target, fr.Pass = fmt.Sprintf("≤ %.2f", targetSerialRatio), pass(ratio <= targetSerialRatio)
		}
		f = append(f, figure{Name: "converge: GCP's serial limit R × latency", Value: res.LimitSeconds, Unit: "s"}, fr,
			figure{Name: "converge: GCP calls per rule", Value: float64(conv.Calls) / rules})
	}
	f = append(f,
		figure{Name: "converge: GCP reads per object created", Value: float64(readsOf(conv.Methods)) / objects, Target: fmt.Sprintf("≤ %.0f", targetReadsPerObject),
			Pass: pass(float64(readsOf(conv.Methods))/objects <= targetReadsPerObject)},
		figure{Name: "converge: GCP writes per object created", Value: float64(writesOf(conv)) / objects, Target: fmt.Sprintf("≤ %.0f", targetWritesPerObject),
			Pass: pass(float64(writesOf(conv))/objects <= targetWritesPerObject)},
		figure{Name: "converge: operation polls per write", Value: float64(opPollsOf(conv.Methods)) / max(1, float64(writesOf(conv)))},
		figure{Name: "steady: GCP reads per policy per poll", Value: readsPerPolicyPerPoll(sc, steady), Target: fmt.Sprintf("≤ %.1f", targetReadsPerPoll),
			Pass: pass(readsPerPolicyPerPoll(sc, steady) <= targetReadsPerPoll)},
		figure{Name: "steady: GCP writes", Value: float64(writesOf(steady)), Target: "0", Pass: pass(writesOf(steady) == 0)},
		figure{Name: "steady: provider CPU", Value: steady.CPU / steady.Seconds, Unit: "cores"},
		figure{Name: "steady: provider RSS (VmRSS)", Value: steady.EndRSS, Unit: "MiB"},
		figure{Name: "steady: RssAnon (heap, stacks)", Value: steady.EndAnon, Unit: "MiB"},
		figure{Name: "steady: RssFile (the binary's mapped pages)", Value: steady.EndFile, Unit: "MiB"},
		figure{Name: "peak provider RSS (VmHWM)", Value: res.last().PeakRSS, Unit: "MiB"},
	)
	if change.Name != "" {
		f = append(f,
			figure{Name: fmt.Sprintf("change %d rules: time", changedRules), Value: change.Seconds, Unit: "s"},
			figure{Name: "change: GCP calls per changed rule", Value: float64(change.Calls) / float64(changedRules)},
			figure{Name: "change: GCP writes per changed rule", Value: float64(writesOf(change)) / float64(changedRules), Target: "≤ 1",
				Pass: pass(float64(writesOf(change))/float64(changedRules) <= 1)})
	}
	if del.Name != "" {
		f = append(f,
			figure{Name: "delete all: time", Value: del.Seconds, Unit: "s"},
			figure{Name: "delete all: GCP calls", Value: float64(del.Calls)})
	}
	var notReady int64
	for _, p := range res.Phases {
		notReady += p.NotReady
	}
	return append(f, figure{Name: "not-ready errors (call on a busy policy)", Value: float64(notReady), Target: "0", Pass: pass(notReady == 0)})
}

// compare pairs every run with the floor run of the same workload and poll.
func (rep *report) compare() {
	for _, r := range rep.Runs {
		if r.Scenario.Null {
			continue
		}
		for _, f := range rep.Runs {
			if !f.Scenario.Null || f.Scenario.Policies != r.Scenario.Policies || f.Scenario.Rules != r.Scenario.Rules || f.Scenario.Inline != r.Scenario.Inline || f.Scenario.Poll != r.Scenario.Poll {
				continue
			}
			o, n := r.phase("converge"), f.phase("converge")
			rep.Floor = append(rep.Floor, floorRow{Scenario: r.Scenario.Name,
				ConvergeOurs: o.Seconds, ConvergeFloor: n.Seconds,
				WritesOurs: apiWritesPerObject(r.Scenario, o), WritesFloor: apiWritesPerObject(f.Scenario, n),
				APICPUOurs: o.ControlPlaneCPU, APICPUFloor: n.ControlPlaneCPU,
				ConflictsOurs: float64(o.API.Conflicts), ConflictsFlr: float64(n.API.Conflicts)})
		}
	}
}

// curve collects the growth points.
func (rep *report) curve() {
	for _, r := range rep.Runs {
		sc := r.Scenario
		if sc.Curve == "" {
			continue
		}
		conv, steady := r.phase("converge"), r.phase("steady")
		x := sc.Policies
		if sc.Curve == curveRules {
			x = sc.ruleObjects()
		}
		rep.Curve = append(rep.Curve, curvePoint{Curve: sc.Curve, X: x, Policies: sc.Policies, Rules: sc.Rules,
			ConvergeS:             conv.Seconds,
			ReadsPerPoll:          float64(readsOf(steady.Methods)) / polls(sc, steady),
			ReadsPerPolicyPerPoll: readsPerPolicyPerPoll(sc, steady),
			AnonMiB:               steady.EndAnon, FileMiB: steady.EndFile, HWMMiB: r.last().PeakRSS,
			SteadyCores: steady.CPU / steady.Seconds,
			APIWrites:   float64(conv.API.writes()), APIWritesPerObject: apiWritesPerObject(sc, conv),
			Load: r.Load})
	}
}

func (rep *report) point(curve string, x int) *curvePoint {
	for i := range rep.Curve {
		if rep.Curve[i].Curve == curve && rep.Curve[i].X == x {
			return &rep.Curve[i]
		}
	}
	return nil
}

// targets computes what each target reached; last holds the figures last
// committed to docs/performance.md, by target id.
func (rep *report) targets(last map[string]float64) {
	add := func(id, name, goal string, v float64, unit string, ok bool, from string) {
		t := target{ID: id, Name: name, Goal: goal, Value: v, Unit: unit, Pass: ok, From: from}
		if l, found := last[id]; found {
			t.Last = &l
		}
		rep.Targets = append(rep.Targets, t)
	}
	for _, f := range rep.Floor {
		id := "floor-ratio-rules"
		if strings.HasPrefix(f.Scenario, "inline") {
			id = "floor-ratio-inline"
		}
		ratio := f.ConvergeOurs / f.ConvergeFloor
		add(id, "convergence ÷ null provider's", fmt.Sprintf("≤ %.2f×", targetFloorRatio), ratio, "×", ratio <= targetFloorRatio, f.Scenario)
	}
	for _, r := range rep.Runs {
		if r.Scenario.Null || r.Scenario.Curve != "" || r.Scenario.Policies != serialPolicies || r.Scenario.Rules != serialRulesPerPolicies || r.Scenario.Inline {
			continue
		}
		ratio := r.phase("converge").Seconds / r.LimitSeconds
		add("serial-ratio", "convergence ÷ GCP's serial limit (P=1 R=1000)", fmt.Sprintf("≤ %.2f×", targetSerialRatio), ratio, "×", ratio <= targetSerialRatio, r.Scenario.Name)
	}
	if p := rep.point(curveRules, targetObjectsAt); p != nil {
		from := fmt.Sprintf("growth %d rule objects", targetObjectsAt)
		add("rss-anon-1000", "RssAnon steady, 1,000 rule objects", fmt.Sprintf("< %.0f MiB", targetAnonMiB), p.AnonMiB, "MiB", p.AnonMiB < targetAnonMiB, from)
		add("vmhwm-1000", "VmHWM, 1,000 rule objects", fmt.Sprintf("< %.0f MiB", targetPeakMiB), p.HWMMiB, "MiB", p.HWMMiB < targetPeakMiB, from)
		add("cpu-1000", "steady CPU, 1,000 rule objects, --poll="+rep.Config.GrowthPoll, fmt.Sprintf("< %.2f cores", targetSteadyCores), p.SteadyCores, "cores", p.SteadyCores < targetSteadyCores, from)
		// The worst step from 1,000 objects up.
		worst, prev := -1.0, p
		for i := range rep.Curve {
			q := &rep.Curve[i]
			if q.Curve != curveRules || q.X <= prev.X {
				continue
			}
			worst = max(worst, (q.AnonMiB-prev.AnonMiB)/float64(q.X-prev.X)*1000)
			prev = q
		}
		if worst >= 0 {
			add("rss-anon-per-1000", "RssAnon per further 1,000 rule objects (worst step)", fmt.Sprintf("< %.0f MiB", targetAnonPer1000MiB), worst, "MiB", worst < targetAnonPer1000MiB, "growth")
		}
	}
	// GCP's figures hold for every run: the worst is what counts.
	reads, writes, rFrom, wFrom := -1.0, -1.0, "", ""
	for _, r := range rep.Runs {
		if r.Scenario.Null {
			continue
		}
		if v := readsPerPolicyPerPoll(r.Scenario, r.phase("steady")); v > reads {
			reads, rFrom = v, r.Scenario.Name
		}
		if v := float64(writesOf(r.phase("converge"))) / float64(r.Scenario.objects()); v > writes {
			writes, wFrom = v, r.Scenario.Name
		}
	}
	if reads >= 0 {
		add("reads-per-policy-poll", "steady GCP reads per policy per poll (worst run)", fmt.Sprintf("≤ %.1f", targetReadsPerPoll), reads, "", reads <= targetReadsPerPoll, rFrom)
		add("writes-per-object", "GCP writes per object created (worst run)", fmt.Sprintf("≤ %.0f", targetWritesPerObject), writes, "", writes <= targetWritesPerObject, wFrom)
	}
}

// targetRow matches a row of docs/performance.md's targets table:
// | `id` | what | goal | reached | ... The reached cell's first number is
// the last committed figure.
var targetRow = regexp.MustCompile("^\\|\\s*`([a-z0-9-]+)`\\s*\\|[^|]*\\|[^|]*\\|\\s*[^0-9|]*([0-9]+(?:\\.[0-9]+)?)")

// lastFigures reads the targets table of doc as last committed (git HEAD),
// or as it is on disk when git cannot tell.
func lastFigures(doc string) map[string]float64 {
	b, err := exec.Command("git", "show", "HEAD:"+filepath.ToSlash(doc)).Output()
	if err != nil {
		if b, err = os.ReadFile(doc); err != nil {
			return nil
		}
	}
	out := map[string]float64{}
	for _, line := range strings.Split(string(b), "\n") {
		if m := targetRow.FindStringSubmatch(line); m != nil {
			if v, err := strconv.ParseFloat(m[2], 64); err == nil {
				out[m[1]] = v
			}
		}
	}
	return out
}

// runPlatform runs the live composition suite, which times node changes
// from the Node write to the GCP rule being right, and, for each Node count
// in scale, the IPAllowlist in a cluster that big; it returns the tables
// they wrote.
func runPlatform(ctx context.Context, outDir, scale string) (string, string) {
	out, err := filepath.Abs(filepath.Join(outDir, "platform-latency.md"))
	if err != nil {
		return "", err.Error()
	}
	_ = os.Remove(out)
	logPath := filepath.Join(outDir, "bench-logs", "platform.log")
	log, err := os.Create(logPath)
	if err != nil {
		return "", err.Error()
	}
	defer log.Close() //nolint:errcheck // a log
	fmt.Fprintf(os.Stderr, ">> platform suite (node-change latency; load average %s; log %s)\n", loadAvg(), logPath)
	// On the real node, Crossplane from its Helm chart and our packages as
	// pods: hack/shared-node.sh boots it for the suite and tears it down.
	cmd := exec.CommandContext(ctx, "hack/shared-node.sh", "go", "test", "-count=1", "-timeout=60m", "-run", "^(TestPlatform|TestScale)$", "./test/platform/")
	cmd.Env = append(os.Environ(), "PLATFORM_LATENCY_OUT="+out, "PLATFORM_SCALE="+scale)
	cmd.Stdout, cmd.Stderr = log, log
	runErr := cmd.Run()
	b, err := os.ReadFile(out)
	switch {
	case err != nil && runErr != nil:
		return "", fmt.Sprintf("platform suite failed (%v) before writing its table; see %s", runErr, logPath)
	case err != nil:
		return "", fmt.Sprintf("platform suite wrote no table: %v", err)
	case runErr != nil:
		return string(b), fmt.Sprintf("platform suite failed (%v) after writing its table; see %s", runErr, logPath)
	}
	return string(b) + "(load average " + loadAvg() + " after the suite)\n", ""
}

func format(v float64, unit string) string {
	s := fmt.Sprintf("%.2f", v)
	switch {
	case v == float64(int64(v)) && v >= 10:
		s = fmt.Sprintf("%.0f", v)
	case v != 0 && v < 0.1 && v > -0.1:
		s = fmt.Sprintf("%.3f", v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

func ratio(a, b float64) string {
	if b == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", a/b)
}

func (rep *report) printTable(out io.Writer) {
	fmt.Fprintf(out, "\nprovider-cloudarmor bench: op latency %s, poll %s (growth %s), steady window %d polls (growth %d), %d CPUs, load average %s → %s\n",
		rep.Config.Latency, rep.Config.Poll, rep.Config.GrowthPoll, rep.Config.SteadyPolls, rep.Config.GrowthSteadyPolls, rep.Config.CPUs, rep.LoadBefore, rep.LoadAfter)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RUN\tFIGURE\tVALUE\tTARGET\tRESULT")
	for _, r := range rep.Runs {
		for _, f := range r.Figures {
			res := ""
			if f.Pass != nil {
				res = "pass"
				if !*f.Pass {
					res = "missed"
				}
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Scenario.Name, f.Name, format(f.Value, f.Unit), f.Target, res)
		}
	}
	_ = w.Flush()

	if len(rep.Floor) > 0 {
		fmt.Fprintln(out, "\nagainst the floor (null provider: Crossplane's managed reconciler, no GCP; same workload, run just before):")
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "WORKLOAD\tCONVERGE ours / floor\tRATIO\tAPI WRITES/OBJECT ours / floor\tRATIO\tAPI SERVER+ETCD CPU ours / floor\tRATIO\t409s ours / floor")
		for _, f := range rep.Floor {
			fmt.Fprintf(w, "%s\t%.1f s / %.1f s\t%s\t%.2f / %.2f\t%s\t%.1f s / %.1f s\t%s\t%.0f / %.0f\n", f.Scenario,
				f.ConvergeOurs, f.ConvergeFloor, ratio(f.ConvergeOurs, f.ConvergeFloor),
				f.WritesOurs, f.WritesFloor, ratio(f.WritesOurs, f.WritesFloor),
				f.APICPUOurs, f.APICPUFloor, ratio(f.APICPUOurs, f.APICPUFloor), f.ConflictsOurs, f.ConflictsFlr)
		}
		_ = w.Flush()
	}

	if len(rep.Curve) > 0 {
		fmt.Fprintf(out, "\ngrowth (--poll=%s, steady window %d polls; rule objects over %d policies, or policies with inline rules):\n", rep.Config.GrowthPoll, rep.Config.GrowthSteadyPolls, growthPolicies)
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "CURVE\tSCALE\tCONVERGE s\tGCP READS/POLL\tREADS/POLICY/POLL\tRssAnon MiB\tRssFile MiB\tVmHWM MiB\tSTEADY CPU cores\tAPI WRITES\tAPI WRITES/OBJECT\tLOAD")
		for _, p := range rep.Curve {
			fmt.Fprintf(w, "%s\t%d\t%.1f\t%.1f\t%.2f\t%.1f\t%.1f\t%.1f\t%.4f\t%.0f\t%.2f\t%s\n", p.Curve, p.X, p.ConvergeS, p.ReadsPerPoll, p.ReadsPerPolicyPerPoll,
				p.AnonMiB, p.FileMiB, p.HWMMiB, p.SteadyCores, p.APIWrites, p.APIWritesPerObject, p.Load)
		}
		_ = w.Flush()
	}

	if len(rep.Targets) > 0 {
		fmt.Fprintln(out, "\ntargets (measured, not asserted; LAST is docs/performance.md as committed):")
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "ID\tTARGET\tGOAL\tNOW\tLAST\tRESULT\tFROM")
		for _, t := range rep.Targets {
			res := "met"
			if !t.Pass {
				res = "missed"
			}
			last := "–"
			if t.Last != nil {
				last = format(*t.Last, t.Unit)
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", t.ID, t.Name, t.Goal, format(t.Value, t.Unit), last, res, t.From)
		}
		_ = w.Flush()
	}

	if rep.Fleet != nil {
		rep.Fleet.print(out)
	}
	if rep.FleetSim != nil {
		rep.FleetSim.print(out)
	}
	if rep.Platform != "" || rep.PlatformErr != "" {
		fmt.Fprintln(out, "\nnode-change latency (test/platform: from a Node write to the GCP rule being right):")
		fmt.Fprint(out, rep.Platform)
		if rep.PlatformErr != "" {
			fmt.Fprintln(out, rep.PlatformErr)
		}
	}
}

func (rep *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
