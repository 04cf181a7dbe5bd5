// Package emulator is a local implementation of the Google Cloud APIs that
// Cloud Armor is managed through, faithful to recorded GCP traffic. It
// serves the official Go clients (google.golang.org/api/compute/v1,
// networksecurity/v1) for tests, benchmarks and demos. See
// docs/emulator.md.
//
// It is the server: it runs every call through one pipeline (serve), holds
// the one store and its compute operations, and mounts the APIs of
// packages securitypolicies (security policies, organization policies, the
// project's tier), backends (backend services, backend buckets, network
// edge security services), networksecurity (address groups), instances,
// routers (Cloud Routers and NAT) and addresses (the static addresses a
// NAT names); what they share is package core.
package emulator

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/armorplane/provider-cloudarmor/internal/emulator/addresses"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/backends"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/core"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/instances"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/networksecurity"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/routers"
	"github.com/armorplane/provider-cloudarmor/internal/emulator/securitypolicies"
)

// A Server is the emulator: an http.Handler over in-memory state.
type Server struct {
	opts      Options
	store     *store
	faultGen  *core.Gen
	mux       *http.ServeMux
	stats     *counters
	now       func() time.Time
	faultsMu  sync.RWMutex
	faults    Faults
	persistMu sync.Mutex
	grants    map[string]access // nil: every accepted token may do everything
	policies  *securitypolicies.API
	groups    *networksecurity.API
	instances *instances.API
	backends  *backends.API
	routers   *routers.API
	addresses *addresses.API
}

// New returns a Server configured by opts. It loads opts.StateFile if set.
func New(opts Options) (*Server, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	seed := opts.Seed
	if seed == 0 {
		seed = core.NewGen(0).Uint64()
	}
	s := &Server{opts: opts, faultGen: core.NewGen(seed + 1), mux: http.NewServeMux(),
		stats: newCounters(), now: time.Now, faults: opts.Faults, grants: compileGrants(opts.Grants)}
	s.store = newStore(core.NewGen(seed), func() time.Time { return s.now() })
	s.policies = securitypolicies.New(policiesHost{serverHost{s}}, opts.DefaultTier)
	s.groups = networksecurity.New(networkSecurityHost{serverHost{s}}, &s.store.groups)
	s.instances = instances.New(instancesHost{serverHost{s}})
	s.backends = backends.New(backendsHost{serverHost{s}}, &s.store.backends)
	s.routers = routers.New(routersHost{serverHost{s}})
	s.addresses = addresses.New(addressesHost{serverHost{s}})
	if err := s.loadState(); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// a call is what a handler needs to know about the request it serves.
type call struct {
	method string // e.g. "securityPolicies.get"
	scope  scope
	policy string // the {policy} path value, if any
	owner  string // what grants name: the project, or organizations/ORG
	// resource, if set, is what a 403 names (organization policies, backend
	// and edge security services); else deniedResource decides.
	resource string
	dryRun   bool // validateOnly=true: validate, change nothing
	// counted is the name the call is counted and logged under: method,
	// or dryRunName(method) for a dry run.
	counted string
}

type handler func(w http.ResponseWriter, r *http.Request, c *call)

// routes is the route table. Every API route is served both at the root and
// under /compute/v1, because option.WithEndpoint makes the client use the
// given URL as the whole base path.
func (s *Server) routes() {
	for _, op := range []struct{ prefix, path string }{
		{"globalOperations.", "/projects/{project}/global/operations"},
		{"regionOperations.", "/projects/{project}/regions/{region}/operations"},
	} {
		s.route("GET", op.path, op.prefix+"list", s.listOps)
		s.route("GET", op.path+"/{operation}", op.prefix+"get", s.getOp(projectOp))
		s.route("POST", op.path+"/{operation}/wait", op.prefix+"wait", s.waitOp)
		s.route("DELETE", op.path+"/{operation}", op.prefix+"delete", s.deleteOp(projectOp))
	}
	s.route("GET", "/projects/{project}/aggregated/operations", "globalOperations.aggregatedList", s.aggregatedOps)
	s.route("GET", "/locations/global/operations", "globalOrganizationOperations.list", s.listOrgOps)
	s.route("GET", "/locations/global/operations/{orgOperation}", "globalOrganizationOperations.get", s.getOp(orgOp))
	s.route("DELETE", "/locations/global/operations/{orgOperation}", "globalOrganizationOperations.delete", s.deleteOp(orgOp))
	s.mountPolicies()
	s.mountNetworkSecurity()
	s.mountInstances()
	s.mountBackends()
	s.mountRouters()
	s.mountAddresses()

	s.mux.HandleFunc("GET /_emulator/stats", s.debugStats)
	s.mux.HandleFunc("POST /_emulator/reset", s.debugReset)
	s.mux.HandleFunc("GET /_emulator/faults", s.debugGetFaults)
	s.mux.HandleFunc("POST /_emulator/faults", s.debugSetFaults)
	s.mux.HandleFunc("GET /_emulator/healthz", func(w http.ResponseWriter, _ *http.Request) {
		core.WriteJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		core.WriteError(w, &core.Error{Code: 404, Reason: "notFound",
			Message: fmt.Sprintf("The requested URL %s was not found on this server.", r.URL.Path)})
	})
}

func (s *Server) route(method, path, name string, h handler) {
	perm := permissionOf(name)
	for _, prefix := range []string{"", "/compute/v1"} {
		s.mux.HandleFunc(method+" "+prefix+path, func(w http.ResponseWriter, r *http.Request) {
			s.serve(w, r, name, perm, h)
		})
	}
}

// serve runs what every API call goes through: counting, auth, the project
// grants, the fields= selection, then the injected faults, then the handler.
// Calls of networksecurity get their errors in that API's format.
// A policy named by its numeric id is resolved to its name for the handler
// and the counters; auth errors and 403s name it as the caller did.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, name string, perm permission, h handler) {
	sc := scope{Project: r.PathValue("project"), Region: r.PathValue("region")}
	c := &call{method: name, scope: sc, policy: r.PathValue("policy"), owner: sc.Project}
	if org := r.PathValue("organization"); org != "" {
		c.owner = "organizations/" + org
	}
	s.describe(r, c)
	if newerAPI(perm) {
		w = core.RPCWriter{ResponseWriter: w} // its own error format, from authentication on
	}
	resolved := s.policies.PolicyName(sc, c.policy)
	dryRun, dryRunErr := validateOnlyParam(r, name)
	c.dryRun, c.counted = dryRun, name
	if dryRun {
		c.counted = dryRunName(name)
	}
	s.stats.request(c.counted)
	if c.policy != "" {
		s.stats.policy(sc.PolicyPath(resolved), c.counted)
	}
	if err := s.authorize(r); err != nil {
		s.stats.unauthenticated()
		core.WriteError(w, err)
		return
	}
	if err := s.permit(r, c, perm); err != nil {
		s.stats.forbidden()
		core.WriteError(w, err)
		return
	}
	sel, err := requestedFields(r, name)
	if err != nil {
		core.WriteError(w, err)
		return
	}
	if s.inject(w, r, name) {
		return
	}
	if perm.write && s.opts.Logf != nil {
		rec := &refusalRecorder{ResponseWriter: w}
		defer rec.log(s, c.counted, r.URL.Path)
		w = rec
	}
	if dryRunErr != nil {
		core.WriteError(w, dryRunErr)
		return
	}
	c.policy = resolved
	if sel == nil {
		h(w, r, c)
		return
	}
	pw := &partialWriter{ResponseWriter: w, sel: sel}
	h(pw, r, c)
	pw.flush()
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mux.ServeHTTP(w, r)
}

// mutation prepares the store request for a mutating call.
// keys are the objects its operation holds busy.
func (s *Server) mutation(r *http.Request, c *call, opType string, keys ...string) mutation {
	return mutation{scope: c.scope, opType: opType, keys: keys, latency: s.opts.OpLatency,
		fail: s.opFailure(c.method), user: s.opts.User,
		requestID: r.URL.Query().Get("requestId"), validateOnly: c.dryRun}
}

// answer answers any mutating compute call: the RUNNING operation (DONE
// for a dry run), or the error. what names the target in the log line.
func (s *Server) answer(w http.ResponseWriter, c *call, dryRun bool, what string, op *operation, err error) {
	if err != nil {
		if e, ok := err.(*core.Error); ok && e.Reason == "resourceNotReady" {
			s.stats.notReady()
		}
		core.WriteError(w, err)
		return
	}
	if dryRun {
		s.stats.dryRun()
		s.logf("%s %s operation=%s validated, nothing changed", c.counted, what, op.Name)
		core.WriteJSON(w, http.StatusOK, renderOp(op, s.now(), false))
		return
	}
	s.stats.mutation()
	s.logf("%s %s operation=%s%s", c.method, what, op.Name, opOutcome(op))
	s.saveState()
	core.WriteJSON(w, http.StatusOK, renderOp(op, s.now(), true))
}

func opOutcome(op *operation) string {
	if op.Err != nil {
		return " error=" + op.Err.Code
	}
	return ""
}

// refusalRecorder notes a write the API refused (validation, a duplicate,
// a busy or missing policy), so Logf can say why a call made no change: a
// test counting a policy's calls can then tell a refused write from a
// repeated one.
type refusalRecorder struct {
	http.ResponseWriter
	code int
	body bytes.Buffer
}

func (w *refusalRecorder) WriteHeader(code int) {
	if w.code == 0 {
		w.code = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *refusalRecorder) Write(b []byte) (int, error) {
	if w.code == 0 {
		w.code = http.StatusOK
	}
	if w.code >= 400 && w.body.Len() < 4096 {
		w.body.Write(b)
	}
	return w.ResponseWriter.Write(b)
}

// log writes one line for a refused write: the method, the path, the
// status, GCP's reason and message.
func (w *refusalRecorder) log(s *Server, method, path string) {
	if w.code < 400 {
		return
	}
	var env struct {
		Error struct {
			Message string
			Status  string
			Errors  []struct{ Reason string }
		}
	}
	_ = json.Unmarshal(w.body.Bytes(), &env)
	reason := env.Error.Status // the newer APIs have no errors list
	if len(env.Error.Errors) > 0 {
		reason = env.Error.Errors[0].Reason
	}
	s.logf("%s %s refused=%d reason=%s message=%q", method, path, w.code, reason, env.Error.Message)
}

func (s *Server) logf(format string, args ...any) {
	if s.opts.Logf != nil {
		s.opts.Logf(format, args...)
	}
}
