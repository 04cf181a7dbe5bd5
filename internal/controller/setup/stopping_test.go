package setup

import (
	"context"
	"errors"
	"testing"

	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// TestManagerStopping: the error controller-runtime gives a controller added
// to a stopped manager is the one managerStopping knows (its text is all
// there is to know it by), and no other error is taken for it.
func TestManagerStopping(t *testing.T) {
	mgr, err := ctrl.NewManager(&rest.Config{Host: "http://127.0.0.1:1"}, ctrl.Options{
		Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = mgr.Start(ctx) // returns at once: the context is done
	err = mgr.Add(manager.RunnableFunc(func(context.Context) error { return nil }))
	if err == nil {
		t.Fatal("a stopped manager accepted a runnable")
	}
	if !managerStopping(err) {
		t.Errorf("managerStopping(%q) = false, want true", err)
	}
	if managerStopping(errors.New("no matches for kind")) {
		t.Error("managerStopping took another error for a stopping manager")
	}
}
