package addressset

import (
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
)

// HeldLong is how long a source may stay unreadable, its last addresses
// allowed, before the provider says so in an event and a metric: an
// allowlist that follows no one is for someone to look at.
const HeldLong = time.Hour

// FlagDropUnreadableAfter is the provider flag that sets dropAfter.
const FlagDropUnreadableAfter = "--drop-unreadable-after"

// heldLong counts the AddressSets whose source has been unreadable longer
// than HeldLong, their last addresses still allowed (or dropped).
var heldLong = prometheus.NewGauge(prometheus.GaugeOpts{
	Namespace: "cloudarmor", Subsystem: "addressset", Name: "sources_held_long",
	Help: "AddressSets whose source has been unreadable longer than an hour: their last addresses are still allowed unless --drop-unreadable-after dropped them.",
})

// labelAllowlist is the label the allowlist controller puts on the
// AddressSets it keeps (securitypolicyallowlist.LabelAllowlist, which
// imports this package).
const labelAllowlist = "cloudarmor.armorplane.io/allowlist"

// unreadableSince is, for each AddressSet whose source cannot be read now,
// when the outage began: an alert takes its age as time() minus the value.
// A series exists only during an outage, so there are never more of them
// than AddressSets.
var unreadableSince = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Namespace: "cloudarmor", Subsystem: "addressset", Name: "unreadable_since_timestamp_seconds",
	Help: "When the source of an AddressSet that cannot be read now became unreadable (Unix time); its last addresses are held meanwhile. allowlist is the SecurityPolicyAllowlist that keeps the set, empty for a set of its own.",
}, []string{"namespace", "name", "allowlist"})

// Collectors returns the AddressSet metrics, for the provider to register
// with its metrics registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{heldLong, unreadableSince} }

// holds remembers the sets whose source cannot be read, with the start of
// their outage (for unreadableSince), and which have been held longer than
// HeldLong, so that each outage is reported once.
type holds struct {
	mu   sync.Mutex
	long map[types.NamespacedName]time.Time
	// outages are the sets unreadable now, with the allowlist label their
	// series carries.
	outages map[types.NamespacedName]string
}

// unreadable records that key's source has been unreadable since since.
func (h *holds) unreadable(key types.NamespacedName, allowlist string, since time.Time) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.outages == nil {
		h.outages = map[types.NamespacedName]string{}
	}
	if old, ok := h.outages[key]; ok && old != allowlist {
		unreadableSince.DeleteLabelValues(key.Namespace, key.Name, old)
	}
	h.outages[key] = allowlist
	unreadableSince.WithLabelValues(key.Namespace, key.Name, allowlist).Set(float64(since.Unix()))
}

// longNow records that key's outage since has lasted held, and reports
// whether it has just passed HeldLong.
func (h *holds) longNow(key types.NamespacedName, since time.Time, held time.Duration) bool {
	if h == nil {
		return false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if held < HeldLong {
		return false
	}
	if h.long == nil {
		h.long = map[types.NamespacedName]time.Time{}
	}
	if s, ok := h.long[key]; ok && s.Equal(since) {
		return false
	}
	h.long[key] = since
	heldLong.Set(float64(len(h.long)))
	return true
}

// readable forgets key's outage: its source answers again, or it is gone.
func (h *holds) readable(key types.NamespacedName) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if allowlist, ok := h.outages[key]; ok {
		unreadableSince.DeleteLabelValues(key.Namespace, key.Name, allowlist)
		delete(h.outages, key)
	}
	if _, ok := h.long[key]; !ok {
		return
	}
	delete(h.long, key)
	heldLong.Set(float64(len(h.long)))
}

// droppedMessage is Ready's message once an unreadable source's addresses
// have been dropped.
func droppedMessage(u *Unreadable, after time.Duration) string {
	return fmt.Sprintf("cannot read %s since %s: %v; its addresses were dropped after %s unreadable (%s)",
		u.Source, u.Since.UTC().Format(time.RFC3339), u.Err, after, FlagDropUnreadableAfter)
}
