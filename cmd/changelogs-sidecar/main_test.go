package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/crossplane/crossplane-runtime/v2/apis/changelogs/proto/v1alpha1"
)

// syncBuffer is a bytes.Buffer safe to read while the server writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestSidecar(t *testing.T) {
	snapshot, err := structpb.NewStruct(map[string]any{"spec": map[string]any{"forProvider": map[string]any{"description": "front door"}}})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 26, 21, 0, 5, 123456789, time.UTC)
	entry := &v1alpha1.ChangeLogEntry{
		Timestamp: timestamppb.New(at), Provider: "provider-cloudarmor:v0.1.0", ApiVersion: "cloudarmor.armorplane.io/v1beta1",
		Kind: "SecurityPolicy", Name: "web", ExternalName: "web-prod", Operation: v1alpha1.OperationType_OPERATION_TYPE_UPDATE, Snapshot: snapshot,
	}
	line := map[string]any{
		"timestamp": "2026-11-26T21:00:05Z", "provider": "provider-cloudarmor:v0.1.0", "apiVersion": "cloudarmor.armorplane.io/v1beta1",
		"kind": "SecurityPolicy", "name": "web", "externalName": "web-prod", "operation": "OPERATION_TYPE_UPDATE",
		"snapshot": map[string]any{"spec": map[string]any{"forProvider": map[string]any{"description": "front door"}}},
	}
	type want struct {
		Lines []map[string]any
		Code  codes.Code
	}
	cases := map[string]struct {
		reason string
		reqs   []*v1alpha1.SendChangeLogRequest
		want   want
	}{
		"OneLineEach": {
			reason: "Each entry is one line of protojson, its timestamp cut to seconds, as the real sidecar writes it; concurrent entries never interleave.",
			reqs:   []*v1alpha1.SendChangeLogRequest{{Entry: entry}, {Entry: entry}, {Entry: entry}},
			want:   want{Lines: []map[string]any{line, line, line}},
		},
		"NoEntry": {
			reason: "A request without an entry is refused and writes nothing.",
			reqs:   []*v1alpha1.SendChangeLogRequest{{}},
			want:   want{Code: codes.InvalidArgument},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "changelogs.sock")
			// A socket file left by an earlier run is replaced.
			if err := os.WriteFile(path, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			out := &syncBuffer{}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- serve(ctx, path, out) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("serve(...): %v", err)
				}
			}()

			conn, err := grpc.NewClient("unix:"+path, grpc.WithTransportCredentials(insecure.NewCredentials()))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = conn.Close() }()
			client := v1alpha1.NewChangeLogServiceClient(conn)
			var got want
			var mu sync.Mutex
			var wg sync.WaitGroup
			for _, req := range tc.reqs {
				wg.Go(func() {
					sendCtx, sendCancel := context.WithTimeout(context.Background(), 10*time.Second)
					defer sendCancel()
					_, err := client.SendChangeLog(sendCtx, req, grpc.WaitForReady(true))
					mu.Lock()
					defer mu.Unlock()
					if c := status.Code(err); c != codes.OK {
						got.Code = c
					}
				})
			}
			wg.Wait()
			for _, l := range strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n") {
				if l == "" {
					continue
				}
				var m map[string]any
				if err := json.Unmarshal([]byte(l), &m); err != nil {
					t.Fatalf("\n%s\nline %q is not JSON: %v", tc.reason, l, err)
				}
				got.Lines = append(got.Lines, m)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nserve(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
