package setup

import (
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// wakeBuffer is how many wake-ups may wait for the woken controller.
const wakeBuffer = 1024

// A Wake lets one kind's controller have an object of another kind
// reconciled at once, without watching that kind: a SecurityPolicyAttachment
// wakes the SecurityPolicy it attached, so the policy's usedBy says so
// within seconds rather than a poll later, and the SecurityPolicy
// controller needs no attachment CRD to start (with Crossplane's
// ManagedResourceActivationPolicy it may never be installed).
type Wake struct {
	ch chan event.GenericEvent
}

// NewWake returns a Wake for one manager: its Source may be watched once.
func NewWake() *Wake {
	return &Wake{ch: make(chan event.GenericEvent, wakeBuffer)}
}

// Wake asks for o (its namespace and name suffice) to be reconciled. It
// never blocks: with the buffer full the wake-up is dropped, and the
// object's poll comes as usual. A nil Wake does nothing.
func (w *Wake) Wake(o client.Object) {
	if w == nil {
		return
	}
	select {
	case w.ch <- event.GenericEvent{Object: o}:
	default:
	}
}

// Watch is the Watch that enqueues the objects woken, or nil for a nil
// Wake.
func (w *Wake) Watch() []Watch {
	if w == nil {
		return nil
	}
	return []Watch{{Source: source.Channel(w.ch, &handler.EnqueueRequestForObject{})}}
}
