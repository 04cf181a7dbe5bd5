package core

import (
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"
)

// A Gen produces ids, names and fingerprints. It has its own lock so that a
// seeded emulator gives the same sequence for the same sequence of calls.
type Gen struct {
	mu  sync.Mutex
	rng *rand.Rand
}

func NewGen(seed uint64) *Gen {
	if seed == 0 {
		seed = rand.Uint64()
	}
	return &Gen{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (g *Gen) Uint64() uint64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rng.Uint64()
}

// Float returns a number in [0,1) for fault decisions.
func (g *Gen) Float() float64 {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rng.Float64()
}

func (g *Gen) Intn(n int) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.rng.IntN(n)
}

// ID returns a 19-digit number like the ids GCP assigns.
func (g *Gen) ID() uint64 {
	const lo = 1_000_000_000_000_000_000
	return lo + g.Uint64()%(8*lo)
}

// Fingerprint returns base64 of 8 random bytes, the shape GCP uses.
func (g *Gen) Fingerprint() string {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], g.Uint64())
	return base64.StdEncoding.EncodeToString(b[:])
}

// OpName mimics "operation-<epochMillis>-<hex>-<hex>-<hex>-<hex>".
func (g *Gen) OpName(now time.Time) string {
	a, b := g.Uint64(), g.Uint64()
	return fmt.Sprintf("operation-%d-%013x-%08x-%08x-%08x", now.UnixMilli(),
		a>>12, uint32(a), uint32(b>>32), uint32(b))
}
