package gcp

import (
	"context"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/compute/v1"
)

func TestEdgeServiceClient(t *testing.T) {
	const (
		path    = "/regions/r/networkEdgeSecurityServices/edge"
		insert  = "POST /regions/r/networkEdgeSecurityServices"
		opWait  = "POST /regions/r/operations/op-1/wait"
		tierMsg = "Invalid value for field 'resource.securityPolicy': 'net'. Network edge security policies need Cloud Armor Enterprise; project 'p' is on CA_STANDARD."
	)
	key := EdgeServiceKey{Project: "p", Region: "r", Name: "edge"}
	cases := map[string]struct {
		reason     string
		routes     routes
		call       func(ctx context.Context, c EdgeServiceClient) error
		wantKind   ErrorKind
		wantSeen   []string
		wantBodies []string
	}{
		"Get": {
			reason: "Get reads the service, uncached: each Get is a read.",
			routes: routes{"GET " + path: {ok(`{"name":"edge","fingerprint":"f1"}`)}},
			call: func(ctx context.Context, c EdgeServiceClient) error {
				if _, err := c.Get(ctx, key); err != nil {
					return err
				}
				_, err := c.Get(ctx, key)
				return err
			},
			wantSeen: []string{"GET " + path, "GET " + path},
		},
		"InsertWaitsRegional": {
			reason: "Insert waits for its regional operation.",
			routes: routes{insert: {ok(opJSON("op-1", "RUNNING"))}, opWait: {ok(opJSON("op-1", "RUNNING")), ok(opJSON("op-1", "DONE"))}},
			call: func(ctx context.Context, c EdgeServiceClient) error {
				return c.Insert(ctx, key, &compute.NetworkEdgeSecurityService{Name: "edge", SecurityPolicy: "net"})
			},
			wantSeen:   []string{insert, opWait, opWait},
			wantBodies: []string{`{"name":"edge","securityPolicy":"net"}`},
		},
		"InsertRefused": {
			reason: "GCP's refusal of an insert is returned as GCP sent it: Invalid.",
			routes: routes{insert: {{status: http.StatusBadRequest, body: errJSON(400, "invalid", tierMsg)}}},
			call: func(ctx context.Context, c EdgeServiceClient) error {
				return c.Insert(ctx, key, &compute.NetworkEdgeSecurityService{Name: "edge", SecurityPolicy: "net"})
			},
			wantKind:   KindInvalid,
			wantSeen:   []string{insert},
			wantBodies: []string{`{"name":"edge","securityPolicy":"net"}`},
		},
		"ValidateInsert": {
			reason: "ValidateInsert sends validateOnly=true and does not wait for the operation.",
			routes: routes{insert: {ok(opJSON("op-1", "DONE"))}},
			call: func(ctx context.Context, c EdgeServiceClient) error {
				return c.ValidateInsert(ctx, key, &compute.NetworkEdgeSecurityService{Name: "edge"})
			},
			wantSeen:   []string{insert + "?validateOnly=true"},
			wantBodies: []string{`{"name":"edge"}`},
		},
		"PatchMaskAndFingerprint": {
			reason: "Patch sends the update mask and the body's fingerprint, and waits.",
			routes: routes{"PATCH " + path: {ok(opJSON("op-1", "DONE"))}},
			call: func(ctx context.Context, c EdgeServiceClient) error {
				return c.Patch(ctx, key, &compute.NetworkEdgeSecurityService{Fingerprint: "f1", Description: "d", ForceSendFields: []string{"Description"}}, "description")
			},
			wantSeen:   []string{"PATCH " + path + "?updateMask=description"},
			wantBodies: []string{`{"description":"d","fingerprint":"f1"}`},
		},
		"PatchStale": {
			reason: "A stale fingerprint is PreconditionFailed.",
			routes: routes{"PATCH " + path: {{status: http.StatusPreconditionFailed, body: errJSON(412, "conditionNotMet", "Supplied fingerprint does not match current metadata fingerprint.")}}},
			call: func(ctx context.Context, c EdgeServiceClient) error {
				return c.Patch(ctx, key, &compute.NetworkEdgeSecurityService{Fingerprint: "old"}, "description")
			},
			wantKind:   KindPreconditionFailed,
			wantSeen:   []string{"PATCH " + path + "?updateMask=description"},
			wantBodies: []string{`{"fingerprint":"old"}`},
		},
		"Delete": {
			reason: "Delete waits for its operation.",
			routes: routes{"DELETE " + path: {ok(opJSON("op-1", "RUNNING"))}, opWait: {ok(opJSON("op-1", "DONE"))}},
			call: func(ctx context.Context, c EdgeServiceClient) error {
				return c.Delete(ctx, key)
			},
			wantSeen: []string{"DELETE " + path, opWait},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, svc := newFakeGCP(t, tc.routes)
			c := NewClient(svc, nil, nil, fastWait).EdgeServices()
			err := tc.call(context.Background(), c)
			if tc.wantKind == KindUnknown && err != nil {
				t.Fatalf("%s\n%v", tc.reason, err)
			}
			if got := Kind(err); err != nil && got != tc.wantKind {
				t.Errorf("%s\nKind(err): want %s, got %s (%v)", tc.reason, tc.wantKind, got, err)
			}
			seen, bodies := f.log()
			if diff := cmp.Diff(tc.wantSeen, seen); diff != "" {
				t.Errorf("%s\nrequests: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantBodies, bodies); diff != "" {
				t.Errorf("%s\nbodies: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
