package chaos

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/test/chaos/harness"
)

// scale is one size of the chaos run.
type scale struct {
	name       string
	policies   int
	rules      int
	killEvery  time.Duration
	kills      int
	editAt     time.Duration // edits applied this long after the creates
	deleteAt   time.Duration // one policy (and its rules) deleted this long after the creates
	convergeIn time.Duration // bound on convergence once the storm ends
}

var (
	short = scale{name: "short", policies: 3, rules: 10, killEvery: 12 * time.Second, kills: 2,
		editAt: 8 * time.Second, deleteAt: 16 * time.Second, convergeIn: 60 * time.Second}
	long = scale{name: "long", policies: 10, rules: 50, killEvery: 30 * time.Second, kills: 8,
		editAt: 45 * time.Second, deleteAt: 100 * time.Second, convergeIn: 8 * time.Minute}
)

const (
	// chaosPoll is the provider's --poll.
	chaosPoll = 10 * time.Second
	// steadyReadsPerPolicyPoll bounds GCP calls per policy per poll
	// interval once everything has converged: the project targets 2 reads;
	// jittered rule polls may straddle a snapshot expiry, hence the slack.
	steadyReadsPerPolicyPoll = 4
	// callsPerChange bounds GCP calls per desired change (create, edit or
	// delete of a policy or rule) during the storm, retries, operation polls,
	// re-reads after kills and 20% failures included. A hot loop exceeds it
	// by orders of magnitude.
	callsPerChange = 40
)

// storm is the fault configuration during the chaos window.
var storm = emulator.Faults{
	Global: emulator.FaultRule{ErrorRate: 0.2, ErrorCodes: []int{429, 500, 503},
		Latency: emulator.Duration(20 * time.Millisecond), OpErrorRate: 0.1},
	RetryAfterSeconds: 1,
}

// TestChaos: policies and rules are created, edited and deleted while the
// emulator fails 20% of calls (429/500/503), answers 20 ms late, fails 10%
// of operations, and the provider is SIGKILLed every killEvery. Once the
// storm ends, GCP must equal the desired state exactly, every object must be
// Ready and Synced, deleted objects must be gone from both sides, and the
// number of GCP calls must stay within the bounds above.
func TestChaos(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped with -short")
	}
	sc := short
	if os.Getenv("CHAOS_LONG") != "" {
		sc = long
	}
	ctx := context.Background()
	e := harness.Start(t, providerBin, harness.Options{
		Emulator: emulator.Options{OpLatency: 50 * time.Millisecond, Auth: emulator.AuthToken, Token: harness.Token, Seed: 8},
		Args: []string{"--poll=" + chaosPoll.String(), "--poll-jitter=1s", "--snapshot-ttl=4s",
			"--max-reconcile-rate=10", "--timeout=30s"},
	})
	e.ClusterConfig(t, "default", project)
	if err := e.Emu.SetFaults(storm); err != nil {
		t.Fatal(err)
	}
	e.Prov.Start(t)

	w := newWorkload(sc.policies, sc.rules)
	changes := sc.policies * (sc.rules + 1)
	begin := time.Now()

	// The killer: SIGKILL every killEvery, restart half a second later.
	var wg sync.WaitGroup
	killsDone := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(killsDone)
		for range sc.kills {
			time.Sleep(sc.killEvery)
			e.Prov.Kill()
			time.Sleep(500 * time.Millisecond)
			e.Prov.Start(t)
		}
	}()
	t.Cleanup(wg.Wait)

	w.apply(ctx, t, e)
	time.Sleep(sc.editAt)
	changes += w.edit()
	w.apply(ctx, t, e)
	time.Sleep(sc.deleteAt - sc.editAt)
	// Delete the last policy with its rules (inline in the short run,
	// SecurityPolicyRule objects in the long one: both go together).
	victim := w.policies[len(w.policies)-1]
	victim.deleted = true
	changes += 1 + len(victim.rules)
	deleted := w.apply(ctx, t, e)
	<-killsDone
	stormEnd := time.Since(begin)
	stormStats := e.Emu.Stats()

	// The storm passes.
	if err := e.Emu.SetFaults(emulator.Faults{}); err != nil {
		t.Fatal(err)
	}
	converge := time.Now()
	objs := w.objects()
	e.Eventually(t, sc.convergeIn, "GCP to equal the desired state and every object to be Ready", func() error {
		if d := w.gcpDiff(e.Emu.Snapshot()); len(d) > 0 {
			return fmt.Errorf("%d differences, first: %s", len(d), strings.Join(d[:min(3, len(d))], "; "))
		}
		for _, o := range objs {
			if err := e.ReadyAndSynced(o); err != nil {
				return err
			}
		}
		for _, o := range deleted {
			if err := e.Gone(o); err != nil {
				return err
			}
		}
		return nil
	})
	convergedIn := time.Since(converge)
	convergedStats := e.Emu.Stats()

	// Steady state: no hot loop, reads bounded per policy per poll.
	quiet := 2 * chaosPoll
	time.Sleep(quiet)
	steadyStats := e.Emu.Stats()
	if d := w.gcpDiff(e.Emu.Snapshot()); len(d) > 0 {
		t.Errorf("GCP drifted from the desired state after converging: %v", d)
	}
	livePolicies := int64(len(w.policies) - 1)
	steadyCalls := steadyStats.Total - convergedStats.Total
	steadyBound := livePolicies * steadyReadsPerPolicyPoll * int64(quiet/chaosPoll+1)
	stormBound := int64(changes*callsPerChange) + int64(len(objs))*int64(stormEnd/chaosPoll+1)
	mutations := steadyStats.Mutations

	fmt.Printf("\nchaos (%s): %d policies x %d rules, %d kills every %s, 20%% 429/500/503, +20ms, 10%% failed operations\n", sc.name, sc.policies, sc.rules, sc.kills, sc.killEvery)
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tvalue\tbound\t")
	fmt.Fprintf(tw, "provider starts\t%d\t\t\n", e.Prov.Starts)
	fmt.Fprintf(tw, "desired changes (creates, edits, deletes)\t%d\t\t\n", changes)
	fmt.Fprintf(tw, "storm duration\t%s\t\t\n", stormEnd.Round(time.Second))
	fmt.Fprintf(tw, "GCP calls during the storm\t%d\t%d\t\n", stormStats.Total, stormBound)
	fmt.Fprintf(tw, "  injected errors\t%d\t\t\n", stormStats.InjectedErrors)
	fmt.Fprintf(tw, "  resourceNotReady answers\t%d\t\t\n", stormStats.NotReady)
	fmt.Fprintf(tw, "convergence after the storm\t%s\t%s\t\n", convergedIn.Round(time.Second), sc.convergeIn)
	fmt.Fprintf(tw, "GCP calls until converged\t%d\t\t\n", convergedStats.Total)
	fmt.Fprintf(tw, "accepted mutations (total)\t%d\t\t\n", mutations)
	fmt.Fprintf(tw, "steady-state calls in %s\t%d\t%d\t\n", quiet, steadyCalls, steadyBound)
	fmt.Fprintf(tw, "policies in GCP / wanted\t%d/%d\t\t\n", len(e.Emu.Snapshot()), livePolicies)
	fmt.Fprintf(tw, "objects Ready / deleted and gone\t%d/%d\t\t\n", len(objs), len(deleted))
	_ = tw.Flush()

	if stormStats.Total > stormBound {
		t.Errorf("GCP calls during the storm: %d, bound %d (a hot loop?)", stormStats.Total, stormBound)
	}
	if steadyCalls > steadyBound {
		t.Errorf("steady-state GCP calls in %s: %d, bound %d; by method: %v", quiet, steadyCalls, steadyBound, diffMethods(steadyStats, convergedStats))
	}
}

func diffMethods(after, before emulator.Stats) map[string]int64 {
	out := map[string]int64{}
	for m, n := range after.Methods {
		if d := n - before.Methods[m]; d > 0 {
			out[m] = d
		}
	}
	return out
}
