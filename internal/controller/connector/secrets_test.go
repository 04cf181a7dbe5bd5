package connector

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"
)

func TestSecretDataCache(t *testing.T) {
	// Connect runs on every reconcile; the Secret must not be read from the
	// API server each time, yet a rotation must show within the TTL.
	now := time.Unix(0, 0)
	reads := 0
	value := "v1"
	c := &Connector{
		secrets: &test.MockClient{MockGet: test.NewMockGetFn(nil, func(o client.Object) error {
			reads++
			o.(*corev1.Secret).Data = map[string][]byte{"key": []byte(value)} //nolint:forcetypeassert // Only Secrets are read.
			return nil
		})},
		cache: &secretCache{ttl: SecretTTL, now: func() time.Time { return now }, entries: map[string]secretEntry{}},
	}
	ref := &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "team-a", Name: "creds"}, Key: "key"}
	other := &xpv2.SecretKeySelector{SecretReference: xpv2.SecretReference{Namespace: "team-b", Name: "creds"}, Key: "key"}

	steps := []struct {
		reason string
		ref    *xpv2.SecretKeySelector
		after  time.Duration
		rotate string
		want   string
		reads  int
	}{
		{reason: "The first read goes to the API server.", ref: ref, want: "v1", reads: 1},
		{reason: "A read within the TTL is served from the cache.", ref: ref, after: SecretTTL / 2, rotate: "v2", want: "v1", reads: 1},
		{reason: "The same name in another namespace is another Secret.", ref: other, want: "v2", reads: 2},
		{reason: "After the TTL the rotated value is read.", ref: ref, after: SecretTTL, want: "v2", reads: 3},
	}
	for i, s := range steps {
		now = now.Add(s.after)
		if s.rotate != "" {
			value = s.rotate
		}
		got, err := c.secretData(context.Background(), s.ref)
		if err != nil {
			t.Fatalf("step %d: %s\nsecretData(...): %v", i, s.reason, err)
		}
		if diff := cmp.Diff(s.want, string(got)); diff != "" || reads != s.reads {
			t.Errorf("step %d: %s\nsecretData(...): -want, +got:\n%s\nreads: want %d, got %d", i, s.reason, diff, s.reads, reads)
		}
	}
}
