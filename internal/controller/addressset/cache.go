package addressset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	kerrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TransformNodeToAddresses keeps of a Node only what an AddressSet reads:
// its name, labels and addresses (and the metadata the cache itself needs).
// A realistic Node is about 14 KB as JSON, most of it images and
// conditions; what is kept is a few hundred bytes, so 5,000 Nodes cost the
// provider about a megabyte instead of seventy.
func TransformNodeToAddresses(obj any) (any, error) {
	n, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	return &corev1.Node{
		TypeMeta: n.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              n.Name,
			UID:               n.UID,
			ResourceVersion:   n.ResourceVersion,
			Generation:        n.Generation,
			CreationTimestamp: n.CreationTimestamp,
			DeletionTimestamp: n.DeletionTimestamp,
			Labels:            n.Labels,
		},
		Status: corev1.NodeStatus{Addresses: n.Status.Addresses},
	}, nil
}

// CanListNodes reports whether kube may list Nodes, by listing one.
// Only a refusal (Forbidden, Unauthorized) says no: another error (the API
// server restarting) leaves the informer to retry, as it would anyway.
func CanListNodes(ctx context.Context, kube client.Reader) bool {
	err := kube.List(ctx, &corev1.NodeList{}, client.Limit(1))
	return !kerrors.IsForbidden(err) && !kerrors.IsUnauthorized(err)
}
