package app

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/apis/changelogs/proto/v1alpha1"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// sidecar is a change log service that keeps what it is sent.
type sidecar struct {
	v1alpha1.UnimplementedChangeLogServiceServer
	mu      sync.Mutex
	entries []*v1alpha1.ChangeLogEntry
}

func (s *sidecar) SendChangeLog(_ context.Context, req *v1alpha1.SendChangeLogRequest) (*v1alpha1.SendChangeLogResponse, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries = append(s.entries, req.GetEntry())
	return &v1alpha1.SendChangeLogResponse{}, nil
}

// serveSidecar serves a sidecar on a unix socket in a temporary folder and
// returns it with the socket's path.
func serveSidecar(t *testing.T) (*sidecar, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "changelogs.sock")
	lis, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	sc := &sidecar{}
	v1alpha1.RegisterChangeLogServiceServer(srv, sc)
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return sc, path
}

// entry is what the tests compare of a change log entry.
type entry struct {
	Provider, APIVersion, Kind, Name, ExternalName string
	Operation                                      v1alpha1.OperationType
	Error                                          string
	Description                                    string // the snapshot's spec.forProvider.description
}

func TestChangeLoggerSendsToTheSocket(t *testing.T) {
	policy := func() *v1beta1.SecurityPolicy {
		sp := &v1beta1.SecurityPolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"}}
		sp.SetGroupVersionKind(v1beta1.SecurityPolicyGroupVersionKind)
		meta.SetExternalName(sp, "web-prod")
		d := "front door"
		sp.Spec.ForProvider.Description = &d
		return sp
	}
	cases := map[string]struct {
		reason string
		op     v1alpha1.OperationType
		err    error
		want   entry
	}{
		"Update": {
			reason: "An entry names the provider and its version, the object, the operation and carries the object as it was.",
			op:     v1alpha1.OperationType_OPERATION_TYPE_UPDATE,
			want: entry{Provider: changeLogProvider(), APIVersion: "cloudarmor.armorplane.io/v1beta1", Kind: "SecurityPolicy", Name: "web", ExternalName: "web-prod",
				Operation: v1alpha1.OperationType_OPERATION_TYPE_UPDATE, Description: "front door"},
		},
		"FailedDelete": {
			reason: "A write GCP refused is logged with GCP's error.",
			op:     v1alpha1.OperationType_OPERATION_TYPE_DELETE,
			err:    errors.New("googleapi: Error 403: forbidden"),
			want: entry{Provider: changeLogProvider(), APIVersion: "cloudarmor.armorplane.io/v1beta1", Kind: "SecurityPolicy", Name: "web", ExternalName: "web-prod",
				Operation: v1alpha1.OperationType_OPERATION_TYPE_DELETE, Error: "googleapi: Error 403: forbidden", Description: "front door"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sc, path := serveSidecar(t)
			cl, conn, err := newChangeLogger(path)
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			if err := cl.Log(context.Background(), policy(), tc.op, tc.err, managed.AdditionalDetails{}); err != nil {
				t.Fatalf("\n%s\nLog(...): %v", tc.reason, err)
			}
			sc.mu.Lock()
			defer sc.mu.Unlock()
			var got []entry
			for _, e := range sc.entries {
				fp := e.GetSnapshot().GetFields()["spec"].GetStructValue().GetFields()["forProvider"].GetStructValue()
				got = append(got, entry{Provider: e.GetProvider(), APIVersion: e.GetApiVersion(), Kind: e.GetKind(), Name: e.GetName(), ExternalName: e.GetExternalName(),
					Operation: e.GetOperation(), Error: e.GetErrorMessage(), Description: fp.GetFields()["description"].GetStringValue()})
			}
			if diff := cmp.Diff([]entry{tc.want}, got); diff != "" {
				t.Errorf("\n%s\nentries the sidecar received: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
