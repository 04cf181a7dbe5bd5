//go:build bench

package main

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/framework/procstat"
)

// How often the benchmark looks.
const (
	checkEvery  = 100 * time.Millisecond // convergence checks (in-memory)
	sampleEvery = 500 * time.Millisecond // time series for the chart
)

// A sample is one point of a run's time series.
type sample struct {
	T             float64 `json:"t"` // seconds since the run's first apply
	RulesReady    int     `json:"rulesReady"`
	PoliciesReady int     `json:"policiesReady"`
	Calls         int64   `json:"calls"`     // emulator API calls so far
	Reads         int64   `json:"reads"`     // policy GETs so far
	Mutations     int64   `json:"mutations"` // accepted writes so far
	NotReady      int64   `json:"notReady"`
	RSSMiB        float64 `json:"rssMiB"`
	HWMMiB        float64 `json:"hwmMiB"`
	CPUSeconds    float64 `json:"cpuSeconds"`
}

// A phase is one measured step of a run.
type phase struct {
	Name     string           `json:"name"`
	Start    float64          `json:"start"` // seconds since the run's first apply
	Seconds  float64          `json:"seconds"`
	Calls    int64            `json:"calls"`
	Methods  map[string]int64 `json:"methods"`
	NotReady int64            `json:"notReady"`
	CPU      float64          `json:"cpuSeconds"`
	PeakRSS  float64          `json:"peakRssMiB"` // VmHWM at the phase's end
	EndRSS   float64          `json:"endRssMiB"`  // VmRSS at the phase's end
	// EndAnon and EndFile split EndRSS into allocated memory and mapped
	// files (the binary).
	EndAnon float64 `json:"endRssAnonMiB"`
	EndFile float64 `json:"endRssFileMiB"`
	// API counts the kube-apiserver requests for our kinds and events.
	API apiCounts `json:"apiServer"`
	// ControlPlaneCPU is the CPU time kube-apiserver and etcd used.
	ControlPlaneCPU float64 `json:"controlPlaneCpuSeconds"`
	// MachineCPU is the CPU time the whole machine used, all processes.
	MachineCPU float64 `json:"machineCpuSeconds"`
}

// result is one scenario's outcome.
type result struct {
	Scenario scenario `json:"scenario"`
	Load     string   `json:"loadAverage"` // at the end of the run
	// LimitSeconds is the physical limit: operations on one policy are
	// serial, policies run in parallel, so R × operation latency.
	LimitSeconds float64  `json:"limitSeconds"`
	Phases       []phase  `json:"phases"`
	Figures      []figure `json:"figures"`
	Samples      []sample `json:"samples"`
}

// runner drives one scenario.
type runner struct {
	cfg   config
	sc    scenario
	e     *env
	begin time.Time

	mu      sync.Mutex
	samples []sample
}

func runScenario(ctx context.Context, cfg config, bin string, sc scenario) (*result, error) {
	logName := strings.NewReplacer(" ", "-", "=", "").Replace(sc.Name)
	e, err := start(ctx, cfg, bin, sc, logName)
	if e != nil {
		defer e.close()
	}
	if err != nil {
		return nil, err
	}
	r := &runner{cfg: cfg, sc: sc, e: e}
	res := &result{Scenario: sc, LimitSeconds: float64(sc.Rules) * cfg.latency.Seconds()}

	// The provider needs a moment to start its controllers; the clock
	// starts at the first apply, as a user's would.
	r.begin = time.Now()
	sctx, stopSampling := context.WithCancel(ctx)
	samplingDone := make(chan struct{})
	go func() { defer close(samplingDone); r.sample(sctx) }()
	defer func() { stopSampling(); <-samplingDone }()

	profile := cfg.profile && !sc.Null
	if profile {
		secs := int(math.Ceil(res.LimitSeconds*2)) + 10
		go func() {
			path := filepath.Join(cfg.outDir, "bench-pprof", logName+"-cpu-converge.pprof")
			if err := e.saveProfile(ctx, fmt.Sprintf("profile?seconds=%d", secs), path); err != nil {
				fmt.Fprintln(os.Stderr, "   cpu profile:", err)
			}
		}()
		go func() {
			path := filepath.Join(cfg.outDir, "bench-pprof", logName+"-apiserver-cpu-converge.pprof")
			if err := e.saveAPIServerProfile(ctx, fmt.Sprintf("profile?seconds=%d", secs), path); err != nil {
				fmt.Fprintln(os.Stderr, "   api server cpu profile:", err)
			}
		}()
	}

	conv, err := r.measure(ctx, "converge", r.converge)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "   converged in %.1fs (limit %.1fs); API server writes %d (409: %d)\n", conv.Seconds, res.LimitSeconds, conv.API.writes(), conv.API.Conflicts)
	res.Phases = []phase{conv}
	changed := max(1, sc.Rules/10)
	// The floor makes no GCP calls, so only its convergence means
	// anything; a growth point is judged by convergence and steady state.
	if !sc.Null {
		steady, err := r.measure(ctx, "steady", func(ctx context.Context) error {
			return sleep(ctx, time.Duration(sc.SteadyPolls)*sc.Poll)
		})
		if err != nil {
			return nil, err
		}
		res.Phases = append(res.Phases, steady)
		if profile {
			if err := e.saveProfile(ctx, "heap?gc=1", filepath.Join(cfg.outDir, "bench-pprof", logName+"-heap-steady.pprof")); err != nil {
				fmt.Fprintln(os.Stderr, "   heap profile:", err)
			}
			// The text form ends with runtime.MemStats: what RssAnon holds
			// beyond the live heap (headroom, stacks, runtime metadata).
			if err := e.saveProfile(ctx, "heap?debug=1", filepath.Join(cfg.outDir, "bench-pprof", logName+"-heap-steady.txt")); err != nil {
				fmt.Fprintln(os.Stderr, "   heap profile:", err)
			}
		}
	}
	if !sc.Null && sc.Curve == "" {
		change, err := r.measure(ctx, "change", r.change)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "   changed %d rules in %.1fs\n", changed*sc.Policies, change.Seconds)
		del, err := r.measure(ctx, "delete", r.deleteAll)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(os.Stderr, "   deleted everything in %.1fs\n", del.Seconds)
		res.Phases = append(res.Phases, change, del)
	}
	stopSampling()
	<-samplingDone

	res.Load = loadAvg()
	r.mu.Lock()
	res.Samples = r.samples
	r.mu.Unlock()
	res.Figures = figures(sc, res, changed*sc.Policies)
	return res, nil
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// measure runs fn and records its time, the GCP calls it caused and the
// provider's CPU and memory.
func (r *runner) measure(ctx context.Context, name string, fn func(context.Context) error) (phase, error) {
	ctx, cancel := context.WithTimeout(ctx, r.cfg.timeout)
	defer cancel()
	before := r.e.emu.Stats()
	apiBefore := r.e.apiServerCounts(ctx)
	cpBefore, busyBefore := r.e.controlPlaneCPU(), machineBusy()
	pb, _ := procstat.Read(r.e.provider.Pid())
	t0 := time.Now()
	err := fn(ctx)
	d := time.Since(t0)
	after := r.e.emu.Stats()
	apiAfter := r.e.apiServerCounts(ctx)
	cpAfter, busyAfter := r.e.controlPlaneCPU(), machineBusy()
	pa, _ := procstat.Read(r.e.provider.Pid())
	if err != nil {
		return phase{}, fmt.Errorf("%s: %w", name, err)
	}
	p := phase{Name: name, Start: t0.Sub(r.begin).Seconds(), Seconds: d.Seconds(), Calls: after.Total - before.Total,
		Methods: map[string]int64{}, NotReady: after.NotReady - before.NotReady,
		CPU: (pa.CPU - pb.CPU).Seconds(), PeakRSS: mib(pa.HWMKiB), EndRSS: mib(pa.RSSKiB), EndAnon: mib(pa.AnonKiB), EndFile: mib(pa.FileKiB), API: apiAfter.minus(apiBefore),
		ControlPlaneCPU: (cpAfter - cpBefore).Seconds(), MachineCPU: (busyAfter - busyBefore).Seconds()}
	for m, n := range after.Methods {
		if v := n - before.Methods[m]; v != 0 {
			p.Methods[m] = v
		}
	}
	return p, nil
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// sample records the time series until ctx ends.
func (r *runner) sample(ctx context.Context) {
	t := time.NewTicker(sampleEvery)
	defer t.Stop()
	for {
		rules, policies := r.ready(ctx)
		st := r.e.emu.Stats()
		ps, _ := procstat.Read(r.e.provider.Pid())
		s := sample{T: time.Since(r.begin).Seconds(), RulesReady: rules, PoliciesReady: policies,
			Calls: st.Total, Reads: reads(st), Mutations: st.Mutations, NotReady: st.NotReady,
			RSSMiB: mib(ps.RSSKiB), HWMMiB: mib(ps.HWMKiB), CPUSeconds: ps.CPU.Seconds()}
		r.mu.Lock()
		r.samples = append(r.samples, s)
		r.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func reads(st emulator.Stats) int64 {
	return st.Methods["securityPolicies.get"] + st.Methods["regionSecurityPolicies.get"]
}

func isReady(c xpv2.Condition) bool { return c.Status == corev1.ConditionTrue }

// ready counts Ready rules (for inline policies, the rules of Ready
// policies) and Ready policies, from the benchmark's watch cache.
func (r *runner) ready(ctx context.Context) (rules, policies int) {
	var pl v1beta1.SecurityPolicyList
	if err := r.e.cache.List(ctx, &pl, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err == nil {
		for i := range pl.Items {
			if isReady(pl.Items[i].GetCondition(xpv2.TypeReady)) {
				policies++
				if r.sc.Inline {
					rules += len(pl.Items[i].Spec.ForProvider.Rules)
				}
			}
		}
	}
	if r.sc.Inline {
		return rules, policies
	}
	var rl v1beta1.SecurityPolicyRuleList
	if err := r.e.cache.List(ctx, &rl, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err == nil {
		for i := range rl.Items {
			if isReady(rl.Items[i].GetCondition(xpv2.TypeReady)) {
				rules++
			}
		}
	}
	return rules, policies
}

func policyName(p int) string  { return fmt.Sprintf("bench-%03d", p) }
func ruleName(p, i int) string { return fmt.Sprintf("bench-%03d-%04d", p, i) }
func priority(i int) int64     { return int64(1000 + i) }

// rangeOf is rule i's source range; changed rules move to 172.16/12.
func rangeOf(p, i int, changed bool) v1beta1.IPRange {
	first := 10
	if changed {
		first = 172
	}
	return v1beta1.IPRange(fmt.Sprintf("%d.%d.%d.%d/32", first, p%256, i/256, i%256))
}

func ruleParams(p, i int, changed bool) v1beta1.RuleParameters {
	action := "allow"
	if i%2 == 1 {
		action = "deny(403)"
	}
	v := "SRC_IPS_V1"
	return v1beta1.RuleParameters{Action: action, Match: &v1beta1.RuleMatcher{VersionedExpr: &v,
		Config: &v1beta1.RuleMatcherConfig{SrcIpRanges: []v1beta1.IPRange{rangeOf(p, i, changed)}}}}
}

func (r *runner) policy(p int) *v1beta1.SecurityPolicy {
	sp := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: policyName(p)}}
	sp.Spec.ForProvider.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
	if r.sc.Inline {
		sp.Spec.ForProvider.Rules = make([]v1beta1.PolicyRule, r.sc.Rules)
		for i := range r.sc.Rules {
			sp.Spec.ForProvider.Rules[i] = v1beta1.PolicyRule{Priority: priority(i), RuleParameters: ruleParams(p, i, false)}
		}
	}
	return sp
}

func (r *runner) rule(p, i int) *v1beta1.SecurityPolicyRule {
	name := policyName(p)
	return &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ruleName(p, i)},
		Spec: v1beta1.SecurityPolicyRuleSpec{ForProvider: v1beta1.SecurityPolicyRuleParameters{
			SecurityPolicy: &name, Priority: priority(i), RuleParameters: ruleParams(p, i, false)}}}
}

// parallel runs fn(0..n-1) on a few workers and returns the first error.
func parallel(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan int)
	)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				if err := fn(ctx, i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return first
}

// converge applies every policy and rule, like `kubectl apply -f` of one
// folder, and waits until all are Ready.
func (r *runner) converge(ctx context.Context) error {
	P, R := r.sc.Policies, r.sc.Rules
	objs := make([]client.Object, 0, P*(R+1))
	for p := range P {
		objs = append(objs, r.policy(p))
	}
	if !r.sc.Inline {
		// Interleave policies so every policy has work from the start,
		// like a folder applied in file order would for one policy per file.
		for i := range R {
			for p := range P {
				objs = append(objs, r.rule(p, i))
			}
		}
	}
	if err := parallel(ctx, len(objs), func(ctx context.Context, i int) error { return r.e.kube.Create(ctx, objs[i]) }); err != nil {
		return err
	}
	return r.waitFor(ctx, "all Ready", func(ctx context.Context) (bool, error) {
		rules, policies := r.ready(ctx)
		return rules == P*R && policies == P, nil
	})
}

// waitFor checks done every checkEvery until it is true.
func (r *runner) waitFor(ctx context.Context, what string, done func(context.Context) (bool, error)) error {
	t := time.NewTicker(checkEvery)
	defer t.Stop()
	for {
		ok, err := done(ctx)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		if err := r.e.alive(); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			rules, policies := r.ready(context.Background())
			return fmt.Errorf("waiting for %s: %w (rules Ready %d, policies Ready %d)", what, ctx.Err(), rules, policies)
		case <-t.C:
		}
	}
}

// changedRule reports whether rule i is one of the 10% change changes.
func (r *runner) changedRule(i int) bool {
	step := max(1, r.sc.Rules/max(1, r.sc.Rules/10))
	return i%step == 0 && i/step < max(1, r.sc.Rules/10)
}

// change moves 10% of each policy's rules to a new source range and waits
// until GCP (the emulator) holds every new range.
func (r *runner) change(ctx context.Context) error {
	P, R := r.sc.Policies, r.sc.Rules
	if r.sc.Inline {
		if err := parallel(ctx, P, func(ctx context.Context, p int) error {
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				sp := &v1beta1.SecurityPolicy{}
				if err := r.e.kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: policyName(p)}, sp); err != nil {
					return err
				}
				for i := range sp.Spec.ForProvider.Rules {
					if r.changedRule(i) {
						sp.Spec.ForProvider.Rules[i].RuleParameters = ruleParams(p, i, true)
					}
				}
				return r.e.kube.Update(ctx, sp)
			})
		}); err != nil {
			return err
		}
	} else {
		var todo [][2]int
		for i := range R {
			if r.changedRule(i) {
				for p := range P {
					todo = append(todo, [2]int{p, i})
				}
			}
		}
		if err := parallel(ctx, len(todo), func(ctx context.Context, k int) error {
			p, i := todo[k][0], todo[k][1]
			return retry.RetryOnConflict(retry.DefaultRetry, func() error {
				cr := &v1beta1.SecurityPolicyRule{}
				if err := r.e.kube.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ruleName(p, i)}, cr); err != nil {
					return err
				}
				cr.Spec.ForProvider.RuleParameters = ruleParams(p, i, true)
				return r.e.kube.Update(ctx, cr)
			})
		}); err != nil {
			return err
		}
	}
	return r.waitFor(ctx, "changed rules in GCP", func(context.Context) (bool, error) {
		return r.gcpHoldsChanges(), nil
	})
}

// gcpHoldsChanges reports whether every changed rule has its new range in
// the emulator.
func (r *runner) gcpHoldsChanges() bool {
	snap := r.e.emu.Snapshot()
	for p := range r.sc.Policies {
		pol := snap["projects/"+project+"/global/securityPolicies/"+policyName(p)]
		if pol == nil {
			return false
		}
		have := map[string]bool{}
		rules, _ := pol["rules"].([]any)
		for _, raw := range rules {
			rule, _ := raw.(map[string]any)
			m, _ := rule["match"].(map[string]any)
			c, _ := m["config"].(map[string]any)
			rs, _ := c["srcIpRanges"].([]any)
			for _, x := range rs {
				if s, ok := x.(string); ok {
					have[fmt.Sprint(rule["priority"])+" "+s] = true
				}
			}
		}
		for i := range r.sc.Rules {
			if r.changedRule(i) && !have[fmt.Sprint(priority(i))+" "+string(rangeOf(p, i, true))] {
				return false
			}
		}
	}
	return true
}

// deleteAll deletes every policy and rule at once, like `kubectl delete -f`,
// and waits until they are gone from the API server and from GCP.
func (r *runner) deleteAll(ctx context.Context) error {
	for _, o := range []client.Object{&v1beta1.SecurityPolicyRule{}, &v1beta1.SecurityPolicy{}} {
		if err := r.e.kube.DeleteAllOf(ctx, o, client.InNamespace(namespace)); err != nil && !kerrors.IsNotFound(err) {
			return err
		}
	}
	return r.waitFor(ctx, "everything deleted", func(ctx context.Context) (bool, error) {
		var pl v1beta1.SecurityPolicyList
		var rl v1beta1.SecurityPolicyRuleList
		if err := r.e.cache.List(ctx, &pl, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			return false, err
		}
		if err := r.e.cache.List(ctx, &rl, client.InNamespace(namespace), client.UnsafeDisableDeepCopy); err != nil {
			return false, err
		}
		return len(pl.Items) == 0 && len(rl.Items) == 0 && len(r.e.emu.Snapshot()) == 0, nil
	})
}
