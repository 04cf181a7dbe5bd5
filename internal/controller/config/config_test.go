package config

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/resource"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/controller/setup"
)

// queued is one request put in the queue, and after how long.
type queued struct {
	Request reconcile.Request
	After   time.Duration
}

// recordingQueue records what is added to it.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	got []queued
}

func (q *recordingQueue) Add(r reconcile.Request) { q.got = append(q.got, queued{Request: r}) }
func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) {
	q.got = append(q.got, queued{Request: r, After: d})
}

func TestDelayedUsageEvents(t *testing.T) {
	usage := func(kind, name string) *v1beta1.ProviderConfigUsage {
		u := &v1beta1.ProviderConfigUsage{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "u"}}
		u.SetProviderConfigReference(xpv2.ProviderConfigReference{Kind: kind, Name: name})
		return u
	}
	cases := map[string]struct {
		reason string
		kind   string
		send   func(h handler.EventHandler, q *recordingQueue)
		want   []queued
	}{
		"CreateOfClusterConfigUsage": {
			reason: "A usage of a ClusterProviderConfig asks for a recount of it, after the delay.",
			kind:   "ClusterProviderConfig",
			send: func(h handler.EventHandler, q *recordingQueue) {
				h.Create(context.Background(), ctrlevent.CreateEvent{Object: usage("ClusterProviderConfig", "default")}, q)
			},
			want: []queued{{Request: reconcile.Request{NamespacedName: types.NamespacedName{Name: "default"}}, After: UsageCountDelay}},
		},
		"DeleteOfNamespacedConfigUsage": {
			reason: "A usage of a namespaced ProviderConfig names the config in its own namespace, after the delay.",
			kind:   "ProviderConfig",
			send: func(h handler.EventHandler, q *recordingQueue) {
				h.Delete(context.Background(), ctrlevent.DeleteEvent{Object: usage("ProviderConfig", "gcp")}, q)
			},
			want: []queued{{Request: reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "team-a", Name: "gcp"}}, After: UsageCountDelay}},
		},
		"OtherKind": {
			reason: "The ProviderConfig controller ignores usages of ClusterProviderConfigs.",
			kind:   "ProviderConfig",
			send: func(h handler.EventHandler, q *recordingQueue) {
				h.Create(context.Background(), ctrlevent.CreateEvent{Object: usage("ClusterProviderConfig", "default")}, q)
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			q := &recordingQueue{}
			tc.send(setup.Delayed(&resource.EnqueueRequestForProviderConfig{Kind: tc.kind}, UsageCountDelay), q)
			if diff := cmp.Diff(tc.want, q.got); diff != "" {
				t.Errorf("\n%s\nqueued: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
