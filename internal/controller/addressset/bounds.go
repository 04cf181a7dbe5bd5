package addressset

import (
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Bounds are what one tenant's source (a remote cluster, the objects of its
// namespace) may cost the provider: a source beyond one is Unreadable,
// naming the bound, its AddressSets keep their last addresses, and other
// tenants' sources are read as before.
type Bounds struct {
	// ResponseBytes bounds one response of a remote API server: a list,
	// or one watch stream (which then ends and is resumed).
	ResponseBytes int64
	// NodesPerCluster bounds the Nodes kept of one remote cluster.
	NodesPerCluster int
	// LabelBytesPerNode bounds the bytes of one remote Node's labels
	// (keys and values) that are kept.
	LabelBytesPerNode int
	// ClustersPerNamespace bounds the distinct remote clusters (and
	// credentials) the AddressSets of one namespace read.
	ClustersPerNamespace int
	// ObjectsPerSource bounds the objects one AddressSet reads of its own
	// namespace (Services, objects of a kind).
	ObjectsPerSource int
	// ValuesPerSource bounds the values (and findings) those objects hold
	// for one AddressSet: what its informer keeps of them.
	ValuesPerSource int
	// NamespaceSourcesPerNamespace bounds the AddressSets of one namespace
	// that read its objects: each is a watch of the API server.
	NamespaceSourcesPerNamespace int
	// DropUnreadableAfter, when positive, is how long a source (a remote
	// cluster, instances, Cloud NAT) may stay unreadable before its set's
	// addresses are dropped; 0 holds them until it answers again.
	DropUnreadableAfter time.Duration
}

// DefaultBounds fit a 5,000-Node GKE cluster (about 14 KB of JSON a Node, so
// 70 MB a full list) with room, and hold a hostile server's endless answer
// to a few hundred megabytes of the provider's memory at most. A namespace
// source is a handful of Services or objects, or one list: a thousand
// objects and five thousand values leave it room.
func DefaultBounds() Bounds {
	return Bounds{ResponseBytes: 128 << 20, NodesPerCluster: 5000, LabelBytesPerNode: 16 << 10, ClustersPerNamespace: 20,
		ObjectsPerSource: 1000, ValuesPerSource: 5000, NamespaceSourcesPerNamespace: 100}
}

// The provider flags that set each bound, for messages that say what to raise.
const (
	FlagResponseBytes        = "--max-remote-response-bytes"
	FlagNodesPerCluster      = "--max-remote-nodes"
	FlagLabelBytesPerNode    = "--max-remote-node-label-bytes"
	FlagClustersPerNamespace = "--max-remote-clusters-per-namespace"
	FlagObjectsPerSource     = "--max-namespace-source-objects"
	FlagValuesPerSource      = "--max-namespace-source-values"
	FlagNamespaceSources     = "--max-namespace-sources-per-namespace"
)

// A BoundError is a source beyond one of the provider's Bounds.
type BoundError struct {
	// What exceeds the bound, e.g. "a response of the API server".
	What string
	// Bound names it, e.g. "bytes per remote response".
	Bound string
	Limit int64
	Flag  string
}

func (e *BoundError) Error() string {
	return fmt.Sprintf("%s: over the provider's bound of %d %s (%s); the platform team can raise it", e.What, e.Limit, e.Bound, e.Flag)
}

func responseBound(limit int64) *BoundError {
	return &BoundError{What: "a response of the API server", Bound: "bytes per remote response", Limit: limit, Flag: FlagResponseBytes}
}

func nodesBound(limit int) *BoundError {
	return &BoundError{What: "the cluster's Node list", Bound: "Nodes per remote cluster", Limit: int64(limit), Flag: FlagNodesPerCluster}
}

func labelsBound(node string, limit int) *BoundError {
	return &BoundError{What: "the labels of Node " + node, Bound: "label bytes per remote Node", Limit: int64(limit), Flag: FlagLabelBytesPerNode}
}

func namespaceSourcesBound(namespace string, limit int) *BoundError {
	return &BoundError{What: "the AddressSets of namespace " + namespace + " that read its objects", Bound: "namespace sources per namespace", Limit: int64(limit), Flag: FlagNamespaceSources}
}

func objectsBound(source string, limit int) *BoundError {
	return &BoundError{What: source, Bound: "objects per namespace source", Limit: int64(limit), Flag: FlagObjectsPerSource}
}

func valuesBound(source string, limit int) *BoundError {
	return &BoundError{What: "the values of " + source, Bound: "values per namespace source", Limit: int64(limit), Flag: FlagValuesPerSource}
}

func clustersBound(namespace string, limit int) *BoundError {
	return &BoundError{What: "the remote clusters of namespace " + namespace, Bound: "remote clusters per namespace", Limit: int64(limit), Flag: FlagClustersPerNamespace}
}

// capTransport gives every response's body at most max bytes: a read
// beyond fails with the bound, so a server that streams an endless answer
// costs the provider max bytes, not all it has.
type capTransport struct {
	rt  http.RoundTripper
	max int64
}

func (t capTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	resp.Body = &capBody{ReadCloser: resp.Body, left: t.max, max: t.max}
	return resp, nil
}

type capBody struct {
	io.ReadCloser
	left, max int64
}

func (b *capBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// A body of exactly max bytes ends here; one with more fails.
		var one [1]byte
		if n, err := b.ReadCloser.Read(one[:]); n == 0 && err != nil {
			return 0, err
		}
		return 0, responseBound(b.max)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// annotationLabelBytes marks a remote Node kept without its labels: they
// were over the bound of label bytes per Node, and this many.
const annotationLabelBytes = "cloudarmor.armorplane.io/label-bytes-over-bound"

// remoteTransform is TransformNodeToAddresses with a bound on the label
// bytes a Node keeps: a Node over it keeps none, and says so, so that
// reading it can say which bound it exceeds.
func remoteTransform(maxLabelBytes int) func(any) (any, error) {
	return func(obj any) (any, error) {
		n, ok := obj.(*corev1.Node)
		if !ok {
			return TransformNodeToAddresses(obj)
		}
		size := 0
		for k, v := range n.Labels {
			size += len(k) + len(v)
		}
		if size <= maxLabelBytes {
			return TransformNodeToAddresses(obj)
		}
		out, err := TransformNodeToAddresses(&corev1.Node{TypeMeta: n.TypeMeta, ObjectMeta: metav1.ObjectMeta{
			Name: n.Name, UID: n.UID, ResourceVersion: n.ResourceVersion, Generation: n.Generation,
			CreationTimestamp: n.CreationTimestamp, DeletionTimestamp: n.DeletionTimestamp}})
		if o, ok := out.(*corev1.Node); ok {
			o.Annotations = map[string]string{annotationLabelBytes: strconv.Itoa(size)}
		}
		return out, err
	}
}
