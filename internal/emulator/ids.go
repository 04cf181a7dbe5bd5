package emulator

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// emptyLabelFingerprint is the labelFingerprint compute reports for a
// resource without labels.
const emptyLabelFingerprint = "42WmSpB8rSM="

// gen produces ids, names and fingerprints. It has its own lock so that a
// seeded emulator gives the same sequence for the same sequence of calls.
type gen struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func newGen(seed uint64) *gen {
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (g *gen) uint64() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rng.Uint64()
}

// float returns a number in [0,1) for fault decisions.
func (g *gen) float() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rng.Float64()
}

func (g *gen) intn(n int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rng.IntN(n)
}

// id returns a 19-digit number like the ids GCP assigns.
func (g *gen) id() uint64 {
	const lo = 1_000_000_000_000_000_000
	return lo + g.uint64()%(8*lo)
}

// fingerprint returns base64 of 8 random bytes, the shape GCP uses.
func (g *gen) fingerprint() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], g.uint64())
	return base64.StdEncoding.EncodeToString(b[:])
}

// opName mimics "operation-<epochMillis>-<hex>-<hex>-<hex>-<hex>".
func (g *gen) opName(now time.Time) string {
	a, b := g.uint64(), g.uint64()
	return fmt.Sprintf("operation-%d-%013x-%08x-%08x-%08x", now.UnixMilli(),
		a>>12, uint32(a), uint32(b>>32), uint32(b))
}

// labelFingerprint is a hash of the labels, so it changes exactly when the
// labels do.
func labelFingerprint(labels map[string]string) string {
	if len(labels) == 0 {
		return emptyLabelFingerprint
	}
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	for _, k := range keys {
		fmt.Fprintf(h, "%s=%s\n", k, labels[k])
	}
	return base64.StdEncoding.EncodeToString(h.Sum(nil)[:8])
}

// pacific is the zone GCP timestamps are written in.
var pacific = func() *time.Location {
	if l, err := time.LoadLocation("America/Los_Angeles"); err == nil {
		return l
	}
	return time.FixedZone("PST", -8*3600)
}()

// timestamp formats like "2023-02-10T13:23:43.497-08:00".
func timestamp(t time.Time) string {
	return t.In(pacific).Format("2006-01-02T15:04:05.000-07:00")
}
