package setup

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/crossplane/crossplane-runtime/v2/pkg/test"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
)

// laggingCache serves a rule whose resourceVersion is behind for the first
// few reads, like an informer that has not had the watch event yet.
type laggingCache struct {
	client.Reader
	versions []string // served in turn; the last one stays
	gone     bool
	reads    int
}

func (c *laggingCache) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	c.reads++
	if c.gone {
		return kerrors.NewNotFound(schema.GroupResource{Resource: "securitypolicyrules"}, key.Name)
	}
	i := min(c.reads, len(c.versions)) - 1
	obj.SetResourceVersion(c.versions[i])
	return nil
}

func TestReadYourWrites(t *testing.T) {
	key := types.NamespacedName{Namespace: "default", Name: "rule"}
	rule := func(rv string) client.Object {
		return &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: rv}}
	}
	type args struct {
		written client.Object // what the reconciler last wrote, if anything
		status  bool          // through the status writer
		patch   bool          // with Patch rather than Update
		cache   *laggingCache
	}
	type want struct {
		putOff int // reconciles requeued before the reconciler ran
	}
	cases := map[string]struct {
		reason string
		args   args
		want   want
	}{
		"NothingWritten": {
			reason: "A reconcile of an object we have not written is not put off.",
			args:   args{cache: &laggingCache{versions: []string{"5"}}},
			want:   want{putOff: 0},
		},
		"CacheLagsBehindUpdate": {
			reason: "After our Update at 7, reconciles are put off until the cache serves 7.",
			args:   args{written: rule("7"), cache: &laggingCache{versions: []string{"5", "6", "7"}}},
			want:   want{putOff: 2},
		},
		"CacheLagsBehindStatusUpdate": {
			reason: "A status update counts as a write too.",
			args:   args{written: rule("7"), status: true, cache: &laggingCache{versions: []string{"6", "7"}}},
			want:   want{putOff: 1},
		},
		"CacheLagsBehindPatch": {
			reason: "A patch counts as a write too.",
			args:   args{written: rule("7"), patch: true, cache: &laggingCache{versions: []string{"6", "7"}}},
			want:   want{putOff: 1},
		},
		"CacheLagsBehindStatusPatch": {
			reason: "So does a status patch.",
			args:   args{written: rule("7"), status: true, patch: true, cache: &laggingCache{versions: []string{"6", "7"}}},
			want:   want{putOff: 1},
		},
		"CacheIsNewer": {
			reason: "Someone wrote after us: a newer version in the cache is fresh enough.",
			args:   args{written: rule("7"), cache: &laggingCache{versions: []string{"9"}}},
			want:   want{putOff: 0},
		},
		"ObjectGone": {
			reason: "An object deleted after our write is reconciled at once.",
			args:   args{written: rule("7"), cache: &laggingCache{gone: true}},
			want:   want{putOff: 0},
		},
		"OtherKind": {
			reason: "Writes of other kinds (a ProviderConfigUsage with the same name) are not waited for.",
			args: args{written: &pcv1beta1.ProviderConfigUsage{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: "7"}},
				cache: &laggingCache{versions: []string{"5"}}},
			want: want{putOff: 0},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := NewReadYourWrites(tc.args.cache, func() *v1beta1.SecurityPolicyRule { return &v1beta1.SecurityPolicyRule{} })
			kube := f.Client(&test.MockClient{
				MockUpdate:       test.NewMockUpdateFn(nil),
				MockPatch:        test.NewMockPatchFn(nil),
				MockStatusUpdate: test.NewMockSubResourceUpdateFn(nil),
				MockStatusPatch:  test.NewMockSubResourcePatchFn(nil),
			})
			if tc.args.written != nil {
				var err error
				ctx, o := context.Background(), tc.args.written
				switch {
				case tc.args.status && tc.args.patch:
					err = kube.Status().Patch(ctx, o, client.Merge)
				case tc.args.status:
					err = kube.Status().Update(ctx, o)
				case tc.args.patch:
					err = kube.Patch(ctx, o, client.Merge)
				default:
					err = kube.Update(ctx, o)
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			ran := 0
			r := f.Reconciler(reconcile.Func(func(context.Context, reconcile.Request) (reconcile.Result, error) {
				ran++
				return reconcile.Result{}, nil
			}))
			putOff := 0
			for ran == 0 && putOff < 10 {
				got, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key})
				if err != nil {
					t.Fatal(err)
				}
				if ran == 0 {
					putOff++
					if diff := cmp.Diff(reconcile.Result{RequeueAfter: FreshnessRetry}, got); diff != "" {
						t.Errorf("\n%s\nReconcile(...) put off: -want, +got:\n%s", tc.reason, diff)
					}
				}
			}
			if diff := cmp.Diff(tc.want.putOff, putOff); diff != "" {
				t.Errorf("\n%s\nreconciles put off: -want, +got:\n%s", tc.reason, diff)
			}
			// The write is waited for once, not on every later reconcile.
			reads := tc.args.cache.reads
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: key}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(reads, tc.args.cache.reads); diff != "" {
				t.Errorf("\n%s\ncache reads by a later Reconcile: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

// A cache that never catches up (say, our write's watch event was lost) must
// not put reconciles off for longer than FreshnessWait after the write.
func TestReadYourWritesGivesUp(t *testing.T) {
	cache := &laggingCache{versions: []string{"5"}}
	f := NewReadYourWrites(cache, func() *v1beta1.SecurityPolicyRule { return &v1beta1.SecurityPolicyRule{} })
	key := types.NamespacedName{Name: "rule"}
	f.last[key] = written{resourceVersion: "7", at: time.Now().Add(-FreshnessWait - time.Millisecond)}
	if f.stale(context.Background(), key) {
		t.Errorf("stale(...): a write older than FreshnessWait still puts reconciles off")
	}
	if _, ok := f.last[key]; ok {
		t.Errorf("stale(...): a write older than FreshnessWait is still remembered")
	}
}

func TestOlderThan(t *testing.T) {
	cases := map[string]struct {
		a, b string
		want bool
	}{
		"Older":            {a: "99", b: "100", want: true},
		"Same":             {a: "100", b: "100", want: false},
		"Newer":            {a: "101", b: "100", want: false},
		"NotNumbersSame":   {a: "x", b: "x", want: false},
		"NotNumbersDiffer": {a: "x", b: "y", want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := olderThan(tc.a, tc.b); got != tc.want {
				t.Errorf("olderThan(%q, %q): want %t, got %t", tc.a, tc.b, tc.want, got)
			}
		})
	}
}
