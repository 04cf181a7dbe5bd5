package setup

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestWake: a wake-up reaches the channel the Watch's source reads, a full
// buffer drops wake-ups rather than blocking the waker, and a nil Wake does
// nothing and has no Watch.
func TestWake(t *testing.T) {
	var none *Wake
	none.Wake(&corev1.ConfigMap{})
	if w := none.Watch(); w != nil {
		t.Errorf("nil Wake's Watch: want none, got %v", w)
	}

	w := NewWake()
	if ws := w.Watch(); len(ws) != 1 || ws[0].Source == nil {
		t.Fatalf("Watch: want one source, got %+v", ws)
	}
	for i := range wakeBuffer + 10 {
		w.Wake(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: string(rune('a' + i%26))}})
	}
	if got := len(w.ch); got != wakeBuffer {
		t.Errorf("queued wake-ups: want %d (the buffer), got %d", wakeBuffer, got)
	}
	if e := <-w.ch; e.Object.GetNamespace() != "ns" || e.Object.GetName() != "a" {
		t.Errorf("first wake-up: %s/%s", e.Object.GetNamespace(), e.Object.GetName())
	}
}
