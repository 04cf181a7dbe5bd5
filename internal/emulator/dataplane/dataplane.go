// Package dataplane is the emulator's data plane: an HTTP server that
// answers a request to a backend service the way Cloud Armor in front of it
// would, by evaluating the security policy the backend service names at
// that moment with package policyeval, and passes what the policy lets
// through to a built-in echo backend. See docs/evaluation.md, "Local data
// plane".
//
// The backend service is named by the Host header:
// <backend>.<project>.backend.local for a global one,
// <backend>.<region>.<project>.backend.local for a regional one.
package dataplane

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"

	compute "google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/internal/emulator"
	"github.com/armorplane/provider-cloudarmor/internal/policyeval"
)

// ClientIPHeader sets the client address when Options.TrustClientIPHeader
// allows it. Rules never see it.
const ClientIPHeader = "X-Emulator-Client-IP"

// VerdictHeader is the header every answer carries: the verdict in one line.
const VerdictHeader = "X-Emulator-Verdict"

// A Source says what guards a backend service; *emulator.Server is one.
type Source interface {
	AttachedPolicy(path string) (emulator.Attached, bool, error)
}

// Options configure a Handler.
type Options struct {
	// TrustClientIPHeader lets ClientIPHeader set the client address, for
	// demos and tests, where every connection comes from one address.
	// Otherwise the client is the connection's remote address.
	TrustClientIPHeader bool
	// MaxBodyBytes bounds a request body; default 1 MiB. Rules never see a
	// body (request.body is not evaluable offline), so it is read and
	// dropped.
	MaxBodyBytes int64
	// Now is the clock of rate limits; default time.Now.
	Now func() time.Time
	// Logf, if set, receives one line per request.
	Logf func(format string, args ...any)
}

// A Handler is the data plane.
type Handler struct {
	src  Source
	opts Options

	mu       sync.Mutex
	backends map[string]*backendState // by backend service path
}

// backendState is a backend's rate-limit state: a stream of the requests
// to it, kept while its policy and address groups stay the same.
type backendState struct {
	mu      sync.Mutex
	version string // what the stream was built from
	start   time.Time
	stream  *policyeval.Stream
}

// New returns the data plane over src.
func New(src Source, o Options) *Handler {
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = 1 << 20
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Handler{src: src, opts: o, backends: map[string]*backendState{}}
}

// ServeHTTP answers one request as Cloud Armor would.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path, ok := BackendPath(r.Host)
	if !ok {
		h.finish(w, r, report{Status: http.StatusBadRequest,
			Verdict: fmt.Sprintf("Host %q names no backend service: use <backend>.<project>.backend.local or <backend>.<region>.<project>.backend.local", r.Host)})
		return
	}
	rep := report{Backend: path}
	ip, err := clientIP(r, h.opts.TrustClientIPHeader)
	if err != nil {
		rep.Status, rep.Verdict = http.StatusBadRequest, err.Error()
		h.finish(w, r, rep)
		return
	}
	rep.ClientIP = ip
	if err := drain(w, r, h.opts.MaxBodyBytes); err != nil {
		rep.Status, rep.Verdict = http.StatusRequestEntityTooLarge, err.Error()
		h.finish(w, r, rep)
		return
	}
	a, found, err := h.src.AttachedPolicy(path)
	switch {
	case err != nil:
		rep.Status, rep.Verdict = http.StatusInternalServerError, "cannot read the backend service's policy: "+err.Error()
	case !found:
		rep.Status, rep.Verdict = http.StatusNotFound, "no backend service "+path+" in the emulator"
	case a.Policy == nil:
		rep.Status, rep.Verdict, rep.forward = http.StatusOK, "no security policy attached: passed", true
	default:
		rep = h.evaluate(r, path, a, rep)
	}
	h.finish(w, r, rep)
}

// evaluate runs the request through the backend's stream and fills the
// report from the verdict.
func (h *Handler) evaluate(r *http.Request, path string, a emulator.Attached, rep report) report {
	rep.Policy = a.Policy.SelfLink
	v, err := h.stream(path, a, request(r, rep.ClientIP))
	if err != nil {
		rep.Status, rep.Verdict = http.StatusInternalServerError, "cannot evaluate the policy: "+err.Error()
		return rep
	}
	an := decide(v)
	rep.fill(v, an)
	return rep
}

// stream evaluates req in the backend's stream, building a new one when
// the policy or the address groups changed since the last request: the
// rate-limit counts start again with a new policy.
func (h *Handler) stream(path string, a emulator.Attached, req policyeval.Request) (policyeval.Verdict, error) {
	h.mu.Lock()
	st, ok := h.backends[path]
	if !ok {
		st = &backendState{}
		h.backends[path] = st
	}
	h.mu.Unlock()

	// The stream's clock must not go back: one request of a backend at a
	// time reads the clock and evaluates.
	st.mu.Lock()
	defer st.mu.Unlock()
	groups := addressGroups(path, a.Groups)
	version, err := versionOf(a.Policy, groups)
	if err != nil {
		return policyeval.Verdict{}, err
	}
	if st.stream == nil || st.version != version {
		e, err := policyeval.New(groups...)
		if err != nil {
			return policyeval.Verdict{}, err
		}
		p, err := policyeval.FromCompute(a.Policy.SelfLink, a.Policy)
		if err != nil {
			return policyeval.Verdict{}, err
		}
		st.stream, st.version, st.start = e.NewStream(p), version, h.opts.Now()
	}
	return st.stream.Evaluate(max(h.opts.Now().Sub(st.start), 0), req)
}

// versionOf identifies what a stream is built from.
func versionOf(sp *compute.SecurityPolicy, groups []policyeval.AddressGroup) (string, error) {
	b, err := json.Marshal(struct {
		Policy *compute.SecurityPolicy
		Groups []policyeval.AddressGroup
	}{sp, groups})
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// drain reads and drops the body, refusing one over limit.
func drain(w http.ResponseWriter, r *http.Request, limit int64) error {
	if r.ContentLength > limit {
		return fmt.Errorf("the request body is over %d bytes", limit)
	}
	_, err := io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, limit))
	var tooLarge *http.MaxBytesError
	if errors.As(err, &tooLarge) {
		return fmt.Errorf("the request body is over %d bytes", limit)
	}
	return nil
}

// finish writes the answer; a request the policy lets through goes to the
// echo backend with the rule's headers added.
func (h *Handler) finish(w http.ResponseWriter, r *http.Request, rep report) {
	if h.opts.Logf != nil {
		h.opts.Logf("data plane %s %s%s client=%s status=%d %s", r.Method, r.Host, r.URL.Path, rep.ClientIP, rep.Status, rep.Verdict)
	}
	w.Header().Set(VerdictHeader, rep.Verdict)
	if rep.Location != "" {
		w.Header().Set("Location", rep.Location)
	}
	if rep.forward {
		echo(w, r, rep)
		return
	}
	writeJSON(w, rep.Status, rep)
}

// echo is the backend behind the policy: it answers 200 with the verdict
// and the headers the rule added to the request.
func echo(w http.ResponseWriter, r *http.Request, rep report) {
	for _, hd := range rep.added {
		r.Header.Set(hd.name, hd.value)
	}
	if len(rep.added) > 0 {
		rep.RequestHeadersAdded = map[string]string{}
		for _, hd := range rep.added {
			rep.RequestHeadersAdded[hd.name] = r.Header.Get(hd.name)
		}
	}
	rep.Echo = &echoed{Method: r.Method, Path: r.URL.Path, Query: r.URL.RawQuery}
	writeJSON(w, http.StatusOK, rep)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
