package addresses

import (
	"hash/fnv"
	"net/netip"
	"strings"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

// The pool of static external addresses is 34.126.0.0/16, beside the
// routers' pool of AUTO_ONLY NAT addresses (34.127.0.0/16), so that a
// test can tell a manual NAT address from an automatic one by its range.
// Host numbers .0 and .255 of each /24 are left out: 254 × 256 addresses.
const poolSize = 254 * 256

// PreferredIP is the IP an EXTERNAL address inserted at path
// ("projects/P/regions/R/addresses/NAME", or its URL) without an address
// gets when no other address holds it: derived from the path (chosen), so
// that a test can know it in advance and the same path gives the same IP
// on every fresh emulator.
func PreferredIP(path string) string { return poolIP(slot(path)) }

// slot is the preferred IP's place in the pool.
func slot(path string) int {
	if i := strings.Index(path, "projects/"); i >= 0 {
		path = path[i:]
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(path))
	v := h.Sum32()
	return int(v>>8&0xff)*254 + int(v%254)
}

func poolIP(n int) string {
	return netip.AddrFrom4([4]byte{34, 126, byte(n / 254), byte(n%254 + 1)}).String()
}

// allocate returns the first IP from path's preferred one on that no
// address holds: external IPs are unique across projects. The host's lock
// must be held.
func (a *API) allocate(path string) (string, error) {
	start := slot(path)
	for i := range poolSize {
		ip := poolIP((start + i) % poolSize)
		if _, taken := a.ips[ip]; !taken {
			return ip, nil
		}
	}
	return "", &core.Error{Code: 503, Reason: "backendError",
		Message: "The emulator's pool of static addresses (34.126.0.0/16) is exhausted."}
}
