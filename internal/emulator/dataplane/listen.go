package dataplane

import (
	"context"
	"errors"
	"net"
	"net/http"
	"time"
)

// maxHeaderBytes bounds a request's header, as the body is by
// Options.MaxBodyBytes.
const maxHeaderBytes = 64 << 10

// A Running is the data plane serving on one address.
type Running struct {
	srv *http.Server
	ln  net.Listener
}

// Listen serves the data plane over src on addr, and only there.
func Listen(addr string, src Source, o Options) (*Running, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	srv := &http.Server{Handler: New(src, o), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: time.Minute,
		IdleTimeout: 2 * time.Minute, MaxHeaderBytes: maxHeaderBytes}
	go func() { _ = srv.Serve(ln) }()
	return &Running{srv: srv, ln: ln}, nil
}

// Addr is the address it listens on.
func (r *Running) Addr() string { return r.ln.Addr().String() }

// Close stops it, waiting briefly for requests in flight.
func (r *Running) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := r.srv.Shutdown(ctx)
	if errors.Is(err, context.DeadlineExceeded) {
		return r.srv.Close()
	}
	return err
}
