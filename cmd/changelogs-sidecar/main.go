// Command changelogs-sidecar stands in for Crossplane's change logs sidecar
// (the image xpkg.crossplane.io/crossplane/changelogs-sidecar, module
// github.com/crossplane/changelogs-sidecar) where that cannot be had: it
// serves crossplane-runtime's ChangeLogService (apis/changelogs/proto/v1alpha1)
// on a unix socket and writes each entry it receives to stdout as one line of
// JSON (protojson, the timestamp cut to whole seconds), as the real sidecar
// does, so `kubectl logs -c changelogs-sidecar | jq` reads both alike.
//
// Why a command of our own: the Go module proxy serves no version of the
// real sidecar's module, so it cannot be built here, and the provider's
// change logs must still be tested end to end, over a socket, against a
// separate process, as they run in a pod. A command (rather than a test
// helper) because that is what the real sidecar is: `make build` builds it
// beside the provider and the emulator, and the e2e suite runs that binary.
// In a cluster, deploy the real sidecar image (docs/security.md); nothing
// here is packaged.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/alecthomas/kingpin/v2"

	"github.com/crossplane/crossplane-runtime/v2/apis/changelogs/proto/v1alpha1"
)

// DefaultSocketPath is where the real sidecar listens, and where providers
// look for it by default.
const DefaultSocketPath = "/var/run/changelogs/changelogs.sock"

func main() {
	app := kingpin.New("changelogs-sidecar", "Serves Crossplane's change log service on a unix socket and writes each entry to stdout as one line of JSON.")
	socket := app.Flag("socket-path", "Path of the unix socket to serve on; a file already there is removed.").Default(DefaultSocketPath).String()
	kingpin.MustParse(app.Parse(os.Args[1:]))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serve(ctx, *socket, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "changelogs-sidecar:", err)
		os.Exit(1)
	}
}

// serve serves the change log service on the unix socket at path until ctx
// is done, writing entries to out.
func serve(ctx context.Context, path string, out io.Writer) error {
	// A socket left by a previous run (the emptyDir outlives a container
	// restart) would make the listen fail.
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("cannot remove the old socket %s: %w", path, err)
	}
	lis, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("cannot listen on %s: %w", path, err)
	}
	srv := grpc.NewServer()
	v1alpha1.RegisterChangeLogServiceServer(srv, &server{out: out})
	go func() {
		<-ctx.Done()
		srv.GracefulStop()
	}()
	if err := srv.Serve(lis); err != nil {
		return fmt.Errorf("cannot serve on %s: %w", path, err)
	}
	return nil
}

// server writes each change log entry it receives to out, one line each.
type server struct {
	v1alpha1.UnimplementedChangeLogServiceServer

	// mu keeps lines whole: entries arrive concurrently, one per
	// reconcile, and a large one is more than one write.
	mu  sync.Mutex
	out io.Writer
}

// SendChangeLog writes the entry as one line of JSON.
func (s *server) SendChangeLog(_ context.Context, req *v1alpha1.SendChangeLogRequest) (*v1alpha1.SendChangeLogResponse, error) {
	if req.GetEntry() == nil {
		return nil, status.Error(codes.InvalidArgument, "the request holds no change log entry")
	}
	e := proto.CloneOf(req.GetEntry())
	if e.GetTimestamp() != nil {
		// Seconds are the resolution the real sidecar logs.
		e.Timestamp.Nanos = 0
	}
	b, err := protojson.Marshal(e)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "cannot marshal the change log entry: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := s.out.Write(append(b, '\n')); err != nil {
		return nil, status.Errorf(codes.Internal, "cannot write the change log entry: %v", err)
	}
	return &v1alpha1.SendChangeLogResponse{}, nil
}
