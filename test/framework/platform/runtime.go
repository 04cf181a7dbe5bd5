package platform

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	kerrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/armorplane/provider-cloudarmor/test/framework/provider"
)

// With --package-runtime=External, core installs a package revision's objects
// and then waits for something else to run it. playRuntime is that something:
// it looks at the active revisions and makes sure each has a process, and that
// each revision's status says what a runtime would. It looks every 250 ms while
// packages are being installed (it acted in the last 10 s), then every 2 s: a
// steady platform costs the API server two LISTs per 2 s instead of eight per
// second.
const (
	runtimeBusyEvery = 250 * time.Millisecond
	runtimeIdleEvery = 2 * time.Second
	runtimeBusyFor   = 10 * time.Second
)

func (p *Platform) playRuntime(ctx context.Context) {
	defer close(p.loopDone)
	var failingSince time.Time
	lastActed := time.Now()
	for {
		p.acted = false
		if err := p.runtimeStep(ctx); err != nil && ctx.Err() == nil {
			// The API server may be briefly busy; a runtime that cannot reach it
			// for a minute is broken, and Err tells the suite.
			if failingSince.IsZero() {
				failingSince = time.Now()
			}
			if time.Since(failingSince) >= time.Minute {
				p.mu.Lock()
				p.loopErr = fmt.Errorf("package runtime: %w", err)
				p.mu.Unlock()
			}
		} else {
			failingSince = time.Time{}
		}
		if p.acted {
			lastActed = time.Now()
		}
		every := runtimeIdleEvery
		if time.Since(lastActed) < runtimeBusyFor {
			every = runtimeBusyEvery
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
	}
}

func (p *Platform) runtimeStep(ctx context.Context) error {
	providers, err := p.activeRevisions(ctx, "ProviderRevision")
	if err != nil {
		return err
	}
	for _, rev := range providers {
		if repository(rev) != ProviderRepository {
			continue
		}
		// A runtime writes the name of the provider's webhook certificate
		// Secret before core establishes the package's CRDs, and core waits
		// for it even for a provider that serves no webhook.
		if err := p.patchStatus(ctx, rev, "", p.Provider != nil); err != nil {
			return err
		}
		// ...and starts the provider once they are established, as a
		// Deployment would be created then: started earlier, the provider
		// would find no CRDs to watch and exit.
		if s, _ := Condition(rev, "RevisionHealthy"); s != "True" || p.Provider != nil {
			continue
		}
		proc := &provider.Process{
			Bin:        p.opts.Bin.Provider,
			Args:       p.opts.ProviderArgs,
			Kubeconfig: p.ProviderKubeconfig,
			LogPath:    filepath.Join(p.LogDir(), "provider.log"),
			Label:      "provider",
		}
		if err := proc.Launch(); err != nil {
			return err
		}
		p.mu.Lock()
		p.Provider = proc
		p.mu.Unlock()
		p.acted = true
		p.opts.Logf("platform: runtime started the provider for %s", rev.GetName())
	}
	functions, err := p.activeRevisions(ctx, "FunctionRevision")
	if err != nil {
		return err
	}
	for _, rev := range functions {
		if err := p.runFunction(ctx, rev); err != nil {
			return err
		}
	}
	return nil
}

// runFunction starts the function of an active FunctionRevision on a free
// port, once, and points its status.endpoint at it.
func (p *Platform) runFunction(ctx context.Context, rev *unstructured.Unstructured) error {
	var bin string
	switch repository(rev) {
	case FunctionRepository:
		bin = p.opts.Bin.Function
	case AutoReadyRepository:
		bin = p.opts.Bin.AutoReady
	default:
		return nil // not ours to run
	}
	p.mu.Lock()
	proc := p.functions[rev.GetName()]
	p.mu.Unlock()
	if proc == nil {
		ports, err := freePorts(2)
		if err != nil {
			return err
		}
		addr := "127.0.0.1:" + strconv.Itoa(ports[0])
		proc = p.process(rev.GetName(), bin, "--address="+addr, "--tls-certs-dir="+p.runtimeCerts)
		if repository(rev) == FunctionRepository {
			// Ours serves metrics, on :8080 by default, where a provider run
			// beside it out of a cluster would serve its own: a free port
			// instead, which FunctionMetrics reads.
			metrics := "127.0.0.1:" + strconv.Itoa(ports[1])
			proc.Args = append(proc.Args, "--metrics-address="+metrics)
			p.mu.Lock()
			p.functionMetrics = "http://" + metrics + "/metrics"
			p.mu.Unlock()
		}
		if err := proc.Launch(); err != nil {
			return err
		}
		p.mu.Lock()
		p.functions[rev.GetName()] = proc
		p.mu.Unlock()
		p.acted = true
		p.opts.Logf("platform: runtime started %s on %s", rev.GetName(), addr)
	}
	return p.patchStatus(ctx, rev, strings.TrimPrefix(proc.Args[0], "--address="), true)
}

// patchStatus writes what a runtime writes in a revision's status: the TLS
// server Secret, for a function its endpoint, and once its process runs the
// RuntimeHealthy condition, which a Deployment's availability would set. The
// revision controller writes status too and may write back an older copy, so
// this runs every step and writes only when something differs; a conflict is
// retried at the next step.
func (p *Platform) patchStatus(ctx context.Context, rev *unstructured.Unstructured, endpoint string, running bool) error {
	want := map[string]string{"tlsServerSecretName": runtimeSecret}
	if endpoint != "" {
		want["endpoint"] = endpoint
	}
	changed := false
	for k, v := range want {
		if got, _, _ := unstructured.NestedString(rev.Object, "status", k); got != v {
			_ = unstructured.SetNestedField(rev.Object, v, "status", k)
			changed = true
		}
	}
	if running {
		if s, _ := Condition(rev, "RuntimeHealthy"); s != "True" {
			setCondition(rev, map[string]any{
				"type":               "RuntimeHealthy",
				"status":             "True",
				"reason":             "HealthyPackageRevision",
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			})
			changed = true
		}
	}
	if !changed {
		return nil
	}
	p.acted = true
	return client.IgnoreNotFound(ignoreConflict(p.admin.Status().Update(ctx, rev)))
}

// setCondition replaces the condition of c's type in o's status, or adds it.
func setCondition(o *unstructured.Unstructured, c map[string]any) {
	conds, _, _ := unstructured.NestedSlice(o.Object, "status", "conditions")
	out := make([]any, 0, len(conds)+1)
	for _, existing := range conds {
		if m, ok := existing.(map[string]any); ok && m["type"] == c["type"] {
			continue
		}
		out = append(out, existing)
	}
	_ = unstructured.SetNestedSlice(o.Object, append(out, c), "status", "conditions")
}

func ignoreConflict(err error) error {
	if kerrors.IsConflict(err) {
		return nil
	}
	return err
}

// activeRevisions lists the revisions of kind whose desired state is Active.
func (p *Platform) activeRevisions(ctx context.Context, kind string) ([]*unstructured.Unstructured, error) {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(schema.GroupVersionKind{Group: "pkg.crossplane.io", Version: "v1", Kind: kind + "List"})
	if err := p.admin.List(ctx, l); err != nil {
		return nil, err
	}
	var active []*unstructured.Unstructured
	for i := range l.Items {
		if s, _, _ := unstructured.NestedString(l.Items[i].Object, "spec", "desiredState"); s == "Active" {
			active = append(active, &l.Items[i])
		}
	}
	return active, nil
}

// repository is the repository a revision's package comes from, without the
// registry and tag: spec.image keeps the public name; the ImageConfig rewrites
// only where it is pulled from.
func repository(rev *unstructured.Unstructured) string {
	img, _, _ := unstructured.NestedString(rev.Object, "spec", "image")
	img = strings.TrimPrefix(img, publicRegistry)
	if i := strings.LastIndexAny(img, ":@"); i > 0 {
		img = img[:i]
	}
	return img
}
