package app

import (
	"io"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/crossplane/crossplane-runtime/v2/apis/changelogs/proto/v1alpha1"
	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/armorplane/provider-cloudarmor/internal/version"
)

// DefaultChangeLogsSocketPath is where Crossplane's change logs sidecar
// listens, in the volume the provider's pod shares with it.
const DefaultChangeLogsSocketPath = "/var/run/changelogs/changelogs.sock"

// changeLogProvider names this provider and its version in each change log
// entry, as "provider-cloudarmor:v0.1.0".
func changeLogProvider() string { return "provider-cloudarmor:" + version.Version }

// newChangeLogger returns crossplane-runtime's gRPC change logger sending to
// the change logs sidecar on the unix socket at socketPath, and the
// connection to close at exit. Nothing is dialled here: the connection is
// made at the first entry, and each entry waits for it up to
// crossplane-runtime's send timeout (10 s), so the provider starts whether
// or not the sidecar is up yet. An entry that cannot be sent is logged by
// the reconciler ("cannot record change log entry") and the reconcile goes
// on: GCP has already been written to.
func newChangeLogger(socketPath string) (managed.ChangeLogger, io.Closer, error) {
	// "unix:" takes an absolute or a relative path; "unix://" only an
	// absolute one.
	conn, err := grpc.NewClient("unix:"+socketPath, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, errors.Wrapf(err, "cannot create the change logs client for %s", socketPath)
	}
	return managed.NewGRPCChangeLogger(v1alpha1.NewChangeLogServiceClient(conn), managed.WithProviderVersion(changeLogProvider())), conn, nil
}
