package gcp

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
)

// reply is one canned response of the test server.
type reply struct {
	status int
	header map[string]string
	body   string
	// delay holds the reply back (until the client gives up, if sooner).
	delay time.Duration
	// abort closes the connection instead of replying.
	abort bool
}

// routes maps "METHOD /path" (below /compute/v1/projects/p) to the replies
// given in turn; the last one repeats.
type routes map[string][]reply

// fakeGCP is a tiny compute endpoint: canned replies per route, and a log
// of what the real compute client sent.
type fakeGCP struct {
	mu     sync.Mutex
	routes routes
	seen   []string
	bodies []string
}

const projectPath = "/compute/v1/projects/p"

func (f *fakeGCP) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	route := r.Method + " " + strings.TrimPrefix(r.URL.Path, projectPath)
	f.mu.Lock()
	f.seen = append(f.seen, route+query(r.URL.Query()))
	if len(body) > 0 {
		f.bodies = append(f.bodies, strings.TrimSpace(string(body)))
	}
	rs := f.routes[route]
	rep := reply{status: http.StatusNotImplemented, body: `{"error":{"code":501,"message":"no route ` + route + `"}}`}
	if len(rs) > 0 {
		rep = rs[0]
		if len(rs) > 1 {
			f.routes[route] = rs[1:]
		}
	}
	f.mu.Unlock()
	if rep.abort {
		panic(http.ErrAbortHandler)
	}
	if rep.delay > 0 {
		select {
		case <-time.After(rep.delay):
		case <-r.Context().Done():
		}
	}
	for k, v := range rep.header {
		w.Header().Set(k, v)
	}
	w.Header().Set("Content-Type", "application/json; charset=UTF-8")
	w.WriteHeader(max(rep.status, http.StatusOK))
	_, _ = w.Write([]byte(rep.body))
}

// query renders the query without the client's fixed alt and prettyPrint.
func query(q url.Values) string {
	q.Del("alt")
	q.Del("prettyPrint")
	if len(q) == 0 {
		return ""
	}
	return "?" + q.Encode()
}

func (f *fakeGCP) log() (seen, bodies []string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.seen...), append([]string(nil), f.bodies...)
}

// newFakeGCP starts a server and a real compute service pointed at it.
func newFakeGCP(t *testing.T, r routes) (*fakeGCP, *compute.Service) {
	t.Helper()
	f := &fakeGCP{routes: r}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	svc, err := compute.NewService(context.Background(), option.WithEndpoint(srv.URL+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return f, svc
}

// Canned bodies.
func opJSON(name, status string) string {
	return `{"kind":"compute#operation","name":"` + name + `","status":"` + status + `","progress":0}`
}

func opErrorJSON(name, code, msg string) string {
	b, _ := json.Marshal(&compute.Operation{Name: name, Status: "DONE", Error: &compute.OperationError{
		Errors: []*compute.OperationErrorErrors{{Code: code, Message: msg}}}})
	return string(b)
}

func errJSON(code int, reason, msg string) string {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": code, "message": msg,
		"errors": []map[string]string{{"domain": "global", "reason": reason, "message": msg}}}})
	return string(b)
}

func ok(body string) reply { return reply{body: body} }

// fastWait keeps operation polling quick in tests.
var fastWait = withWaitOptions(withPollInterval(time.Millisecond, 5*time.Millisecond), withOperationTimeout(5*time.Second))

// newHandlerService returns a real compute service pointed at h.
func newHandlerService(t *testing.T, h http.Handler) *compute.Service {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	svc, err := compute.NewService(context.Background(), option.WithEndpoint(srv.URL+"/compute/v1/"), option.WithoutAuthentication())
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// withWaitOptions configures how the Client waits for operations; tests
// use it to poll quickly.
func withWaitOptions(o ...waitOption) ClientOption {
	return func(cl *Client) { cl.waitOpts = append(cl.waitOpts, o...) }
}
