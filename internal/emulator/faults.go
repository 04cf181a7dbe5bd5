package emulator

import (
	"net/http"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
)

var defaultFaultCodes = []int{429, 500, 503}

// Faults returns the fault configuration in effect.
func (s *Server) Faults() Faults {
	s.faultsMu.RLock()
	defer s.faultsMu.RUnlock()
	return s.faults
}

// SetFaults replaces the fault configuration at runtime.
func (s *Server) SetFaults(f Faults) error {
	if err := f.validate(); err != nil {
		return err
	}
	methods := make(map[string]FaultRule, len(f.Methods))
	for k, v := range f.Methods {
		methods[k] = v // a private copy: the caller may keep changing its map
	}
	f.Methods = methods
	s.faultsMu.Lock()
	defer s.faultsMu.Unlock()
	s.faults = f
	return nil
}

// ruleFor returns the rule of a method: its own if configured, else Global.
func (f Faults) ruleFor(method string) FaultRule {
	if r, ok := f.Methods[method]; ok {
		return r
	}
	return f.Global
}

// inject applies added latency and injected errors before a call reaches the
// API. It reports whether it has already answered the request.
func (s *Server) inject(w http.ResponseWriter, r *http.Request, method string) bool {
	f := s.Faults()
	rule := f.ruleFor(method)
	if d := time.Duration(rule.Latency); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-r.Context().Done():
		}
	}
	if rule.ErrorRate <= 0 || s.faultGen.Float() >= rule.ErrorRate {
		return false
	}
	codes := rule.ErrorCodes
	if len(codes) == 0 {
		codes = defaultFaultCodes
	}
	retryAfter := f.RetryAfterSeconds
	if retryAfter <= 0 {
		retryAfter = 1
	}
	s.stats.injected()
	core.WriteError(w, core.ErrInjected(codes[s.faultGen.Intn(len(codes))], retryAfter))
	return true
}

// opFailure decides whether this mutation's operation finishes with an error.
func (s *Server) opFailure(method string) *opError {
	rule := s.Faults().ruleFor(method)
	if rule.OpErrorRate <= 0 || s.faultGen.Float() >= rule.OpErrorRate {
		return nil
	}
	return &opError{Code: "INTERNAL_ERROR", HTTPStatus: 500, HTTPMessage: "INTERNAL SERVER ERROR",
		Message: "Internal error. Please try again or contact Google Support."}
}
