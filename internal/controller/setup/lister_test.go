package setup

import (
	"context"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// listOptionsClient records the options of each List.
type listOptionsClient struct {
	client.Client
	lists []client.ListOptions
}

func (c *listOptionsClient) List(_ context.Context, _ client.ObjectList, opts ...client.ListOption) error {
	lo := client.ListOptions{}
	lo.ApplyOptions(opts)
	c.lists = append(c.lists, lo)
	return nil
}

// The state metrics recorder lists every managed resource every few
// seconds only to count conditions; a deep copy of each made megabytes of
// garbage every time.
func TestListerListsWithoutDeepCopy(t *testing.T) {
	c := &listOptionsClient{}
	l := lister{c}
	if err := l.List(context.Background(), &v1beta1.SecurityPolicyRuleList{}, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	if len(c.lists) != 1 {
		t.Fatalf("lists: got %d, want 1", len(c.lists))
	}
	got := c.lists[0]
	if got.UnsafeDisableDeepCopy == nil || !*got.UnsafeDisableDeepCopy {
		t.Errorf("UnsafeDisableDeepCopy: got %v, want true", got.UnsafeDisableDeepCopy)
	}
	if got.Namespace != "ns" {
		t.Errorf("namespace: got %q, want the caller's option kept", got.Namespace)
	}
}
