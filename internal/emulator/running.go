package emulator

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"

	compute "google.golang.org/api/compute/v1"
	"google.golang.org/api/option"
)

// TB is the part of testing.TB that Start needs; *testing.T satisfies it.
// It is an interface here so that the emulator does not import "testing".
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Cleanup(func())
}

// A Running is an emulator serving HTTP on a loopback port.
type Running struct {
	*Server
	url string
	srv *http.Server
	ln  net.Listener
}

// Start runs an emulator on a random 127.0.0.1 port for the duration of a
// test. It fails the test if it cannot start and stops when the test ends.
// Like New, it requires a bearer token unless opts.Auth says otherwise.
func Start(tb TB, opts Options) *Running {
	tb.Helper()
	r, err := Listen("127.0.0.1:0", opts)
	if err != nil {
		tb.Fatalf("cannot start the emulator: %v", err)
		return nil
	}
	tb.Cleanup(func() { _ = r.Close() })
	return r
}

// StartService runs an emulator as Start does and returns it with an
// official compute client for it (NewService), failing the test if there is
// none.
func StartService(tb TB, opts Options) (*compute.Service, *Running) {
	tb.Helper()
	r := Start(tb, opts)
	if r == nil {
		return nil, nil
	}
	svc, err := r.NewService(context.Background())
	if err != nil {
		tb.Fatalf("cannot make a compute client for the emulator: %v", err)
	}
	return svc, r
}

// Listen starts an emulator on addr ("127.0.0.1:0" for a random port).
func Listen(addr string, opts Options) (*Running, error) {
	s, err := New(opts)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	r := &Running{Server: s, url: "http://" + ln.Addr().String(), ln: ln,
		srv: &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// URL is the root URL, e.g. http://127.0.0.1:41234.
func (r *Running) URL() string { return r.url }

// Endpoint is the value for option.WithEndpoint: URL() + "/compute/v1/".
func (r *Running) Endpoint() string { return r.url + "/compute/v1/" }

// Close stops the server, waiting briefly for in-flight calls.
func (r *Running) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return r.srv.Close()
	}
	return err
}

// NewService returns an official compute client for this emulator, sending
// a bearer token it accepts. Tests use it to change state behind the
// provider's back (drift) through the normal API.
func (r *Running) NewService(ctx context.Context) (*compute.Service, error) {
	return r.NewServiceWithToken(ctx, r.token())
}

// token is a bearer token this emulator accepts.
func (r *Running) token() string {
	if r.opts.Auth == AuthToken {
		return r.opts.Token
	}
	return "emulator"
}

// clientWith is the client option of an HTTP client that sends token.
func clientWith(token string) option.ClientOption {
	return option.WithHTTPClient(&http.Client{Transport: bearerTransport{token: token, next: http.DefaultTransport}})
}

// NewServiceWithToken returns an official compute client for this emulator
// that sends the given bearer token, e.g. one tenant's token in Options.Grants.
func (r *Running) NewServiceWithToken(ctx context.Context, token string) (*compute.Service, error) {
	return compute.NewService(ctx, option.WithEndpoint(r.Endpoint()), clientWith(token))
}

// bearerTransport adds "Authorization: Bearer <token>" to each request.
type bearerTransport struct {
	token string
	next  http.RoundTripper
}

func (b bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.token)
	return b.next.RoundTrip(req)
}
