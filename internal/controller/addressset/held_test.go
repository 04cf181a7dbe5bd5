package addressset

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// TestUnreadableSince: a series per AddressSet unreadable now, its value the
// outage's start, gone once the source answers or the set is forgotten.
func TestUnreadableSince(t *testing.T) {
	since := time.Date(2026, 12, 5, 2, 0, 0, 0, time.UTC)
	web := types.NamespacedName{Namespace: "held-a", Name: "web-nodes"}
	batch := types.NamespacedName{Namespace: "held-b", Name: "batch"}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(unreadableSince)
	series := func() map[string]float64 {
		t.Helper()
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]float64{}
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				key, mine := "", false
				for _, l := range m.GetLabel() {
					key += l.GetName() + "=" + l.GetValue() + " "
					// The gauge is the process's: other tests of the
					// package leave their sets in it.
					mine = mine || l.GetName() == "namespace" && strings.HasPrefix(l.GetValue(), "held-")
				}
				if mine {
					out[key] = m.GetGauge().GetValue()
				}
			}
		}
		return out
	}
	h := &holds{}
	h.unreadable(web, "web", since)
	h.unreadable(batch, "", since.Add(time.Minute))
	h.unreadable(web, "web", since) // the same outage, read again
	want := map[string]float64{
		"allowlist=web name=web-nodes namespace=held-a ": float64(since.Unix()),
		"allowlist= name=batch namespace=held-b ":        float64(since.Add(time.Minute).Unix()),
	}
	if diff := cmp.Diff(want, series()); diff != "" {
		t.Errorf("two outages: -want, +got:\n%s", diff)
	}
	h.readable(web)
	delete(want, "allowlist=web name=web-nodes namespace=held-a ")
	if diff := cmp.Diff(want, series()); diff != "" {
		t.Errorf("web answers again: -want, +got:\n%s", diff)
	}
	h.readable(batch)
	if diff := cmp.Diff(map[string]float64{}, series()); diff != "" {
		t.Errorf("both answer again: -want, +got:\n%s", diff)
	}
}
