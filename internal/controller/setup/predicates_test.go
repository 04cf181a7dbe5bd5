package setup

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlevent "sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

func TestDesiredStateChanged(t *testing.T) {
	const (
		pending   = meta.AnnotationKeyExternalCreatePending
		succeeded = meta.AnnotationKeyExternalCreateSucceeded
		failed    = meta.AnnotationKeyExternalCreateFailed
		name      = meta.AnnotationKeyExternalName
	)
	obj := func(generation int64, labels, annotations map[string]string) client.Object {
		return &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Generation: generation, Labels: labels, Annotations: annotations}}
	}
	deleting := func(finalizers ...string) client.Object {
		now := metav1.Now()
		return &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Generation: 2, DeletionTimestamp: &now, Finalizers: finalizers}}
	}
	living := func(finalizers ...string) client.Object {
		return &v1beta1.SecurityPolicyRule{ObjectMeta: metav1.ObjectMeta{Generation: 2, Finalizers: finalizers}}
	}
	type args struct {
		old, new client.Object
	}
	cases := map[string]struct {
		reason string
		args   args
		want   bool
	}{
		"ForeignFinalizerLeftWhileDeleting": {
			reason: "The garbage collector removing foregroundDeletion is what lets the reconciler delete the external resource.",
			args:   args{old: deleting("foregroundDeletion", "finalizer.managedresource.crossplane.io"), new: deleting("finalizer.managedresource.crossplane.io")},
			want:   true,
		},
		"FinalizersUnchangedWhileDeleting": {
			reason: "A status write to an object being deleted changes nothing the reconciler waits for.",
			args:   args{old: deleting("finalizer.managedresource.crossplane.io"), new: deleting("finalizer.managedresource.crossplane.io")},
		},
		"FinalizerAddedToLivingObject": {
			reason: "The reconciler adds its own finalizer; that write needs no second reconcile.",
			args:   args{old: living(), new: living("finalizer.managedresource.crossplane.io")},
		},
		"CreatePending": {
			reason: "The reconciler writes external-create-pending before it creates; it goes on by itself.",
			args:   args{old: obj(1, nil, nil), new: obj(1, nil, map[string]string{pending: "t1"})},
			want:   false,
		},
		"CreateSucceededWithExternalName": {
			reason: "The reconciler records a create and the external name it chose in one write, then requeues.",
			args: args{old: obj(1, nil, map[string]string{pending: "t1"}),
				new: obj(1, nil, map[string]string{pending: "t1", succeeded: "t2", name: "policy/1000"})},
			want: false,
		},
		"CreateFailed": {
			reason: "A failed create requeues by itself.",
			args:   args{old: obj(1, nil, map[string]string{pending: "t1"}), new: obj(1, nil, map[string]string{pending: "t1", failed: "t2"})},
			want:   false,
		},
		"StatusOnly": {
			reason: "A status update changes neither generation, labels nor annotations.",
			args:   args{old: obj(1, nil, map[string]string{name: "p"}), new: obj(1, nil, map[string]string{name: "p"})},
			want:   false,
		},
		"ExternalNameChangedByUser": {
			reason: "Changing the external name of an object that has one is the user's doing.",
			args:   args{old: obj(1, nil, map[string]string{name: "a"}), new: obj(1, nil, map[string]string{name: "b"})},
			want:   true,
		},
		"ExternalNameSetWithoutCreate": {
			reason: "Setting an external name outside a create is the user's doing (say, to import).",
			args:   args{old: obj(1, nil, nil), new: obj(1, nil, map[string]string{name: "b"})},
			want:   true,
		},
		"ExternalNameRemoved": {
			reason: "Removing an annotation is a change.",
			args:   args{old: obj(1, nil, map[string]string{name: "a", succeeded: "t"}), new: obj(1, nil, map[string]string{succeeded: "t"})},
			want:   true,
		},
		"UserAnnotation": {
			reason: "Any other annotation may change what the reconciler does (say, pausing it).",
			args:   args{old: obj(1, nil, nil), new: obj(1, nil, map[string]string{"crossplane.io/paused": "true"})},
			want:   true,
		},
		"Spec": {
			reason: "A spec change bumps the generation.",
			args:   args{old: obj(1, nil, nil), new: obj(2, nil, nil)},
			want:   true,
		},
		"Labels": {
			reason: "A label change passes, as in crossplane-runtime.",
			args:   args{old: obj(1, nil, nil), new: obj(1, map[string]string{"team": "a"}, nil)},
			want:   true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := desiredStateChanged().Update(ctrlevent.UpdateEvent{ObjectOld: tc.args.old, ObjectNew: tc.args.new})
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nUpdate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
