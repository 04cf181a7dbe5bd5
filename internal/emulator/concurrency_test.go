package emulator

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	compute "google.golang.org/api/compute/v1"
)

// TestConcurrentWritersOnePolicy: while one operation on a policy runs, the
// other writers get resourceNotReady, exactly like GCP.
func TestConcurrentWritersOnePolicy(t *testing.T) {
	scopes(t, Options{OpLatency: 400 * time.Millisecond}, func(t *testing.T, em *Running, api policyAPI) {
		waiter(t, api)(api.Insert(policyWith("p")))
		const writers = 6
		errs := make([]error, writers)
		var wg sync.WaitGroup
		for i := range writers {
			wg.Go(func() {
				_, errs[i] = api.AddRule("p", ipRule(int64(100+i), "allow", "10.0.0."+strconv.Itoa(i)))
			})
		}
		wg.Wait()
		won, notReady := 0, 0
		for _, err := range errs {
			switch e := asAPIErr(err); {
			case e == nil:
				won++
			case cmp.Equal(e, &apiErr{400, "resourceNotReady", "The resource '" + api.Path("p") + "' is not ready"}):
				notReady++
			default:
				t.Errorf("unexpected error: %+v", e)
			}
		}
		if won != 1 || notReady != writers-1 {
			t.Errorf("want 1 winner and %d resourceNotReady, got %d and %d", writers-1, won, notReady)
		}
		if got := em.Stats().NotReady; got != writers-1 {
			t.Errorf("stats.NotReady: want %d, got %d", writers-1, got)
		}
	})
}

// TestConcurrentWritersManyPolicies: operations on different policies are
// independent.
func TestConcurrentWritersManyPolicies(t *testing.T) {
	scopes(t, Options{OpLatency: 200 * time.Millisecond}, func(t *testing.T, em *Running, api policyAPI) {
		const n = 8
		errs := make([]error, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				name := "p" + strconv.Itoa(i)
				op, err := api.Insert(policyWith(name))
				if err == nil {
					_, err = api.WaitOp(op.Name)
				}
				if err == nil {
					_, err = api.AddRule(name, ipRule(1, "allow", "*"))
				}
				errs[i] = err
			})
		}
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("writer %d: %v", i, err)
			}
		}
	})
}

// TestOperationLatency: RUNNING until the latency passes; wait blocks until
// DONE; and the policy is writable again afterwards.
func TestOperationLatency(t *testing.T) {
	scopes(t, Options{OpLatency: 300 * time.Millisecond}, func(t *testing.T, em *Running, api policyAPI) {
		op, err := api.Insert(policyWith("p"))
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := api.GetOp(op.Name); got.Status != "RUNNING" || got.EndTime != "" {
			t.Errorf("GET right away: want RUNNING, got %s", got.Status)
		}
		start := time.Now()
		got, err := api.WaitOp(op.Name)
		if err != nil || got.Status != "DONE" || got.Progress != 100 {
			t.Fatalf("wait: %+v, %v", got, err)
		}
		if el := time.Since(start); el < 150*time.Millisecond {
			t.Errorf("wait returned after %s, before the operation could finish", el)
		}
		waiter(t, api)(api.AddRule("p", ipRule(5, "allow", "*")))
	})
}

// TestWaitTimeout: wait returns the operation as it stands when it times out.
func TestWaitTimeout(t *testing.T) {
	em := Start(t, Options{OpLatency: time.Hour, WaitTimeout: 50 * time.Millisecond})
	api := globalAPI{newService(t, em)}
	op, err := api.Insert(policyWith("p"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := api.WaitOp(op.Name)
	if err != nil || got.Status != "RUNNING" {
		t.Errorf("want RUNNING after the wait timeout, got %+v, %v", got, err)
	}
	_, err = api.Patch("p", &compute.SecurityPolicy{Description: "x"})
	if e := asAPIErr(err); e == nil || e.Reason != "resourceNotReady" {
		t.Errorf("want resourceNotReady, got %v", err)
	}
}
