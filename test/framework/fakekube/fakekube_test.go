package fakekube

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/pager"
)

func client(t *testing.T, s *Server, i int, token string) kubernetes.Interface {
	t.Helper()
	kc, err := s.Kubeconfig(i)
	if err != nil {
		t.Fatal(err)
	}
	rc, err := clientcmd.RESTConfigFromKubeConfig(kc)
	if err != nil {
		t.Fatal(err)
	}
	rc.BearerToken = token
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func TestServer(t *testing.T) {
	s, err := Start(Options{Clusters: 2, Nodes: 1200, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// A paged list, over https verified against the CA, under the path.
	cs := client(t, s, 1, "t")
	var names []string
	p := pager.New(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return cs.CoreV1().Nodes().List(ctx, o)
	})
	p.PageSize = 500
	var first *corev1.Node
	err = p.EachListItem(ctx, metav1.ListOptions{}, func(o runtime.Object) error {
		n := o.(*corev1.Node)
		if first == nil {
			first = n
		}
		names = append(names, n.Name)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(1200, len(names)); diff != "" {
		t.Errorf("Nodes listed: -want +got:\n%s", diff)
	}
	if diff := cmp.Diff(nodeName(1, 0), first.Name); diff != "" {
		t.Errorf("first Node: -want +got:\n%s", diff)
	}
	b, _ := json.Marshal(first)
	if len(b) < 8<<10 || len(b) > 15<<10 {
		t.Errorf("a Node is %d bytes of JSON, want 8-15 KB as a GKE Node", len(b))
	}
	if len(first.Labels) < 25 || len(first.Status.Conditions) < 5 || len(first.Status.Images) < 30 || len(first.Status.Addresses) < 3 {
		t.Errorf("Node not GKE-like: %d labels, %d conditions, %d images, %d addresses",
			len(first.Labels), len(first.Status.Conditions), len(first.Status.Images), len(first.Status.Addresses))
	}

	// A watch sees a heartbeat as MODIFIED, with a newer resourceVersion.
	l, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cs.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	s.Beat(1, 7)
	select {
	case ev := <-w.ResultChan():
		n, _ := ev.Object.(*corev1.Node)
		if ev.Type != watch.Modified || n == nil || n.Name != nodeName(1, 7) || n.ResourceVersion <= l.ResourceVersion {
			t.Errorf("watch event: got %s %+v, want MODIFIED of %s after resourceVersion %s", ev.Type, n, nodeName(1, 7), l.ResourceVersion)
		}
	case <-ctx.Done():
		t.Fatal("no watch event")
	}

	// Discovery answers; a wrong token is refused.
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Errorf("version: %v", err)
	}
	if _, err := client(t, s, 0, "wrong").CoreV1().Nodes().List(ctx, metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Errorf("wrong token: got %v, want Unauthorized", err)
	}
}

// TestInformer: an informer of Nodes, as a provider runs on a remote
// cluster, lists every Node and then sees the kubelets' heartbeats.
func TestInformer(t *testing.T) {
	s, err := Start(Options{Clusters: 1, Nodes: 1000, Token: "t"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cs := client(t, s, 0, "t")
	inf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "nodes", "", fields.Everything()), &corev1.Node{}, 0, nil)
	updates := make(chan string, 100)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(_, n any) { updates <- n.(*corev1.Node).Name }}); err != nil {
		t.Fatal(err)
	}
	go inf.RunWithContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if diff := cmp.Diff(1000, len(inf.GetStore().List())); diff != "" {
		t.Errorf("Nodes in the informer: -want +got:\n%s", diff)
	}
	// The watch opens after the list: beat until one arrives.
	for {
		s.Beat(0, 3)
		select {
		case name := <-updates:
			if diff := cmp.Diff(nodeName(0, 3), name); diff != "" {
				t.Errorf("updated Node: -want +got:\n%s", diff)
			}
			return
		case <-time.After(100 * time.Millisecond):
		case <-ctx.Done():
			t.Fatal("no update")
		}
	}
}
