//go:build bench

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
)

// The project's performance targets (README, Performance).
const (
	targetRatio          = 1.3
	targetReadsPerPoll   = 2.0
	targetPeakRSSMiB     = 40.0
	targetReadsPerObject = 2.0
	targetWritesPerObj   = 1.0
)

// A figure is one row of the table.
type figure struct {
	Name   string  `json:"name"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit,omitempty"`
	Target string  `json:"target,omitempty"`
	// Pass is nil for figures without a target.
	Pass *bool `json:"pass,omitempty"`
}

type reportConfig struct {
	Latency      string `json:"opLatency"`
	Poll         string `json:"poll"`
	SteadyPolls  int    `json:"steadyPolls"`
	ProviderArgs string `json:"providerArgs,omitempty"`
	CPUs         int    `json:"cpus"`
}

// growthRow compares one scale with the others at the same rule count.
type growthRow struct {
	Scale          string  `json:"scale"`
	Ratio          float64 `json:"convergeRatio"`
	CallsPerRule   float64 `json:"callsPerRule"`
	ReadsPerPoll   float64 `json:"readsPerPolicyPerPoll"`
	SteadyReadsMin float64 `json:"steadyReadsPerMinute"`
	PeakRSSMiB     float64 `json:"peakRssMiB"`
	CPUConverge    float64 `json:"cpuSecondsConverge"`
}

type report struct {
	Started    time.Time    `json:"started"`
	Config     reportConfig `json:"config"`
	LoadBefore string       `json:"loadAverageBefore"`
	LoadAfter  string       `json:"loadAverageAfter"`
	Runs       []*result    `json:"runs"`
	Growth     []growthRow  `json:"growth,omitempty"`
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

// figures computes a run's table rows.
func figures(cfg config, sc scenario, res *result, changedRules int) []figure {
	conv, steady, change, del := res.phase("converge"), res.phase("steady"), res.phase("change"), res.phase("delete")
	rules := float64(sc.Policies * sc.Rules)
	objects := float64(sc.Policies)
	if !sc.Inline {
		objects += rules
	}
	ratio := conv.Seconds / res.LimitSeconds
	polls := steady.Seconds / cfg.poll.Seconds()
	readsPerPoll := float64(readsOf(steady.Methods)) / float64(sc.Policies) / polls
	notReady := conv.NotReady + steady.NotReady + change.NotReady + del.NotReady
	f := []figure{
		{Name: "converge: apply to all Ready", Value: conv.Seconds, Unit: "s", Target: fmt.Sprintf("≤ %.1f s", targetRatio*res.LimitSeconds)},
		{Name: "converge: physical limit R × latency", Value: res.LimitSeconds, Unit: "s"},
		{Name: "converge: ratio to the limit", Value: ratio, Unit: "×", Target: fmt.Sprintf("≤ %.1f", targetRatio), Pass: pass(ratio <= targetRatio)},
		{Name: "converge: GCP calls per rule", Value: float64(conv.Calls) / rules},
		{Name: "converge: GCP reads per object created", Value: float64(readsOf(conv.Methods)) / objects, Target: fmt.Sprintf("≤ %.0f", targetReadsPerObject),
			Pass: pass(float64(readsOf(conv.Methods))/objects <= targetReadsPerObject)},
		{Name: "converge: GCP writes per object created", Value: float64(writesOf(conv)) / objects, Target: fmt.Sprintf("≤ %.0f", targetWritesPerObj),
			Pass: pass(float64(writesOf(conv))/objects <= targetWritesPerObj)},
		{Name: "converge: operation polls per write", Value: float64(opPollsOf(conv.Methods)) / max(1, float64(writesOf(conv)))},
		{Name: "converge: provider CPU", Value: conv.CPU, Unit: "s"},
		// The benchmark itself creates each object once; the rest are the
		// provider's writes (updates, status updates, events, usages).
		{Name: "converge: API server writes per object (provider's)", Value: (float64(conv.API.writes()) - objects) / objects},
		{Name: "converge: API server write conflicts (409)", Value: float64(conv.API.Conflicts)},
		{Name: "converge: watches the API server closed on a slow client", Value: float64(conv.API.terminated())},
		{Name: "converge: kube-apiserver + etcd CPU", Value: conv.ControlPlaneCPU, Unit: "s"},
		{Name: "converge: machine CPU in use", Value: conv.MachineCPU / conv.Seconds, Unit: fmt.Sprintf("cores of %d", numCPU())},
		{Name: "steady: GCP reads per policy per poll", Value: readsPerPoll, Target: fmt.Sprintf("≤ %.0f", targetReadsPerPoll), Pass: pass(readsPerPoll <= targetReadsPerPoll)},
		{Name: "steady: GCP writes", Value: float64(writesOf(steady)), Target: "0", Pass: pass(writesOf(steady) == 0)},
		{Name: "steady: provider CPU", Value: 100 * steady.CPU / steady.Seconds, Unit: "% of a core"},
		{Name: "steady: provider RSS (VmRSS)", Value: steady.EndRSS, Unit: "MiB"},
		{Name: "steady: of which allocated (heap, stacks)", Value: steady.EndAnon, Unit: "MiB"},
		{Name: "steady: of which the binary's mapped pages", Value: steady.EndFile, Unit: "MiB"},
		{Name: "peak provider RSS (VmHWM)", Value: del.PeakRSS, Unit: "MiB"},
		{Name: fmt.Sprintf("change %d rules: time", changedRules), Value: change.Seconds, Unit: "s"},
		{Name: "change: GCP calls per changed rule", Value: float64(change.Calls) / float64(changedRules)},
		{Name: "change: GCP writes per changed rule", Value: float64(writesOf(change)) / float64(changedRules), Target: "≤ 1",
			Pass: pass(float64(writesOf(change))/float64(changedRules) <= 1)},
		{Name: "delete all: time", Value: del.Seconds, Unit: "s"},
		{Name: "delete all: GCP calls", Value: float64(del.Calls)},
		{Name: "not-ready errors (call on a busy policy)", Value: float64(notReady), Target: "0", Pass: pass(notReady == 0)},
	}
	if sc.Main {
		for i := range f {
			if f[i].Name == "peak provider RSS (VmHWM)" {
				f[i].Target = fmt.Sprintf("< %.0f MiB", targetPeakRSSMiB)
				f[i].Pass = pass(del.PeakRSS < targetPeakRSSMiB)
			}
		}
	}
	return f
}

// growth compares the rule-object runs: how cost grows with R at fixed P×R.
func (rep *report) growth() {
	for _, r := range rep.Runs {
		if r.Scenario.Inline {
			continue
		}
		conv, steady := r.phase("converge"), r.phase("steady")
		rules := float64(r.Scenario.Policies * r.Scenario.Rules)
		polls, _ := time.ParseDuration(rep.Config.Poll)
		rep.Growth = append(rep.Growth, growthRow{
			Scale:          fmt.Sprintf("P=%d R=%d", r.Scenario.Policies, r.Scenario.Rules),
			Ratio:          conv.Seconds / r.LimitSeconds,
			CallsPerRule:   float64(conv.Calls) / rules,
			ReadsPerPoll:   float64(readsOf(steady.Methods)) / float64(r.Scenario.Policies) / (steady.Seconds / polls.Seconds()),
			SteadyReadsMin: float64(readsOf(steady.Methods)) / steady.Seconds * 60,
			PeakRSSMiB:     r.phase("delete").PeakRSS,
			CPUConverge:    conv.CPU,
		})
	}
}

func format(v float64, unit string) string {
	s := fmt.Sprintf("%.2f", v)
	if v == float64(int64(v)) && v >= 10 {
		s = fmt.Sprintf("%.0f", v)
	}
	if unit != "" {
		s += " " + unit
	}
	return s
}

func (rep *report) printTable(out io.Writer) {
	fmt.Fprintf(out, "\nprovider-cloudarmor bench: op latency %s, poll %s, steady window %d polls, %d CPUs, load average %s → %s\n",
		rep.Config.Latency, rep.Config.Poll, rep.Config.SteadyPolls, rep.Config.CPUs, rep.LoadBefore, rep.LoadAfter)
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "RUN\tFIGURE\tVALUE\tTARGET\tRESULT")
	for _, r := range rep.Runs {
		for _, f := range r.Figures {
			res := ""
			if f.Pass != nil {
				res = "pass"
				if !*f.Pass {
					res = "FAIL"
				}
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", r.Scenario.Name, f.Name, format(f.Value, f.Unit), f.Target, res)
		}
	}
	_ = w.Flush()
	if len(rep.Growth) > 1 {
		fmt.Fprintln(out, "\ngrowth (SecurityPolicyRule objects, same total rule count where P×R matches):")
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "SCALE\tCONVERGE/LIMIT\tCALLS/RULE\tREADS/POLICY/POLL\tSTEADY READS/MIN\tPEAK RSS MiB\tCPU CONVERGE s")
		for _, g := range rep.Growth {
			fmt.Fprintf(w, "%s\t%.2f\t%.2f\t%.2f\t%.1f\t%.1f\t%.1f\n", g.Scale, g.Ratio, g.CallsPerRule, g.ReadsPerPoll, g.SteadyReadsMin, g.PeakRSSMiB, g.CPUConverge)
		}
		_ = w.Flush()
	}
}

func (rep *report) writeJSON(path string) error {
	b, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}
