package stack

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
)

// External is a cluster the user already has: `make run KUBECONFIG=…
// REGISTRY=…` installs into it as into the node, with every image (Crossplane
// core, our packages, function-auto-ready, the emulator) pushed to a
// registry the host can push to anonymously and the cluster can pull from.
type External struct {
	// Kubeconfig reaches the cluster.
	Kubeconfig string
	// Reg is the registry; Reg.Pull is how the cluster names it.
	Reg node.Registry
	// KubectlBin and HelmBin are the clients `make run` builds.
	KubectlBin, HelmBin string
	// Dir holds the clients' caches and the run's files.
	Dir string
}

// Kubectl runs kubectl against the cluster and returns its stdout.
func (e *External) Kubectl(ctx context.Context, args ...string) (string, error) {
	return node.RunKubectl(ctx, e.KubectlBin, e.Kubeconfig, e.ClientEnv(), args...)
}

// Apply applies manifests.
func (e *External) Apply(ctx context.Context, manifests string) error {
	cmd := e.command(ctx, e.KubectlBin, "--kubeconfig="+e.Kubeconfig, "apply", "-f", "-")
	cmd.Stdin = strings.NewReader(manifests)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("kubectl apply: %w\n%s", err, out)
	}
	return nil
}

// ClientEnv keeps the clients' caches and config under Dir, not $HOME.
func (e *External) ClientEnv() []string { return node.ClientEnv(e.Kubeconfig, e.Dir) }

// WorkDir is Dir.
func (e *External) WorkDir() string { return e.Dir }

// Registry is Reg.
func (e *External) Registry() node.Registry { return e.Reg }

func (e *External) command(ctx context.Context, bin string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = e.ClientEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd
}

// installedGroups are the API groups of the CRDs Install brings: Crossplane's
// and our packages'.
var installedGroups = []string{".crossplane.io", ".armorplane.io"}

// CheckEmpty refuses a cluster that already runs Crossplane or has our
// kinds: Install brings its own Crossplane and Uninstall removes all of it,
// which must not touch what the user had.
func (e *External) CheckEmpty(ctx context.Context) error {
	if _, err := e.Kubectl(ctx, "version"); err != nil {
		return fmt.Errorf("cannot reach the cluster of %s: %w", e.Kubeconfig, err)
	}
	crds, err := e.ours(ctx)
	if err != nil {
		return err
	}
	if len(crds) > 0 {
		return fmt.Errorf("the cluster already has Crossplane or our kinds (%s, …): make run installs its own Crossplane and removes it on Ctrl-C; use a cluster without them", crds[0])
	}
	if out, _ := e.Kubectl(ctx, "get", "namespace", "crossplane-system", EmulatorNamespace, "--ignore-not-found", "-o", "name"); out != "" {
		return fmt.Errorf("the cluster already has %s: make run installs into its own namespaces and removes them on Ctrl-C; use a cluster without them", strings.Fields(out)[0])
	}
	return nil
}

// ours lists the CRDs of installedGroups.
func (e *External) ours(ctx context.Context) ([]string, error) {
	out, err := e.Kubectl(ctx, "get", "crd", "-o", "name")
	if err != nil {
		return nil, err
	}
	var crds []string
	for _, c := range strings.Fields(out) {
		for _, g := range installedGroups {
			if strings.HasSuffix(c, g) {
				crds = append(crds, c)
			}
		}
	}
	return crds, nil
}

// Uninstall removes what Install put in the cluster, in the order that lets
// each part finish: the packages (Crossplane deletes their Deployments), the
// provider's RBAC and runtime config, Crossplane's release, the namespaces,
// then the CRDs Crossplane and the packages made. Objects the caller applied
// (examples) must be deleted first, while the provider still runs. It goes
// on past errors and returns them all.
func (e *External) Uninstall(ctx context.Context, repoRoot string, logf func(string, ...any)) error {
	var errs []string
	do := func(what string, f func() error) {
		if err := f(); err != nil {
			errs = append(errs, fmt.Sprintf("%s: %v", what, err))
			return
		}
		logf("removed %s", what)
	}
	kubectl := func(args ...string) func() error {
		return func() error { _, err := e.Kubectl(ctx, args...); return err }
	}
	do("the packages", kubectl("delete", "configurations.pkg.crossplane.io,providers.pkg.crossplane.io,functions.pkg.crossplane.io", "--all", "--wait", "--timeout=3m"))
	// What the packages made goes with them, through Crossplane (the
	// XRD's finalizer removes its CRD): wait for it while Crossplane runs.
	do("what the packages made (XRDs, Compositions, revisions)", func() error {
		err := e.WaitGone(ctx, 2*time.Minute, packageMade...)
		var left stillThere
		if errors.As(err, &left) && onlyRevisions(left.left) {
			// Only revisions are left (seen once in make test, 2026-12-05:
			// a ProviderRevision outlived its Provider by 2 minutes). They
			// hold nothing outside the cluster and go with Crossplane's
			// CRDs below, whose removal is checked.
			logf("%v; they go with Crossplane's CRDs", err)
			return nil
		}
		return err
	})
	do("the provider's runtime config and RBAC", kubectl("delete", "--ignore-not-found", "--wait", "-f", filepath.Join(repoRoot, "cluster/rbac/provider-runtime.yaml")))
	do("the ImageConfig", kubectl("delete", "imageconfigs.pkg.crossplane.io", ImageConfigName, "--ignore-not-found"))
	do("Crossplane's Helm release", func() error {
		cmd := e.command(ctx, e.HelmBin, "uninstall", "crossplane", "--namespace", "crossplane-system", "--wait", "--timeout", "3m")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
	do("the namespaces", kubectl("delete", "namespace", "crossplane-system", EmulatorNamespace, "--ignore-not-found", "--wait", "--timeout=3m"))
	do("Crossplane's and the packages' CRDs", func() error {
		crds, err := e.ours(ctx)
		if err != nil || len(crds) == 0 {
			return err
		}
		// Nothing that would act on a finalizer runs any more, and what
		// the objects stood for outside the cluster is gone: an object
		// still held by one (a ProviderConfig whose usage Crossplane's
		// last moments left, a lock) would keep its CRD forever.
		if err := e.dropFinalizers(ctx, crds); err != nil {
			return err
		}
		_, err = e.Kubectl(ctx, append([]string{"delete", "--ignore-not-found", "--wait", "--timeout=3m"}, crds...)...)
		return err
	})
	if len(errs) > 0 {
		return fmt.Errorf("the cluster may keep some of what make run installed: %s", strings.Join(errs, "; "))
	}
	return nil
}

// packageMade are the kinds of what Crossplane makes from our packages.
var packageMade = []string{"compositeresourcedefinitions.apiextensions.crossplane.io", "compositions.apiextensions.crossplane.io",
	"compositionrevisions.apiextensions.crossplane.io", "providerrevisions.pkg.crossplane.io",
	"functionrevisions.pkg.crossplane.io", "configurationrevisions.pkg.crossplane.io"}

// WaitGone waits until no object of kinds (resource.group) is left, or
// fails after limit naming those that are.
func (e *External) WaitGone(ctx context.Context, limit time.Duration, kinds ...string) error {
	deadline := time.Now().Add(limit)
	for {
		var left []string
		for _, k := range kinds {
			out, err := e.Kubectl(ctx, "get", k, "-A", "-o", "name", "--ignore-not-found")
			if err != nil && !strings.Contains(err.Error(), "the server doesn't have a resource type") {
				return err
			}
			left = append(left, strings.Fields(out)...)
		}
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return stillThere{limit: limit, left: left}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// dropFinalizers clears the finalizers of every object of crds
// (customresourcedefinition.apiextensions.k8s.io/<resource>.<group>).
func (e *External) dropFinalizers(ctx context.Context, crds []string) error {
	for _, c := range crds {
		kind := strings.TrimPrefix(c, "customresourcedefinition.apiextensions.k8s.io/")
		out, err := e.Kubectl(ctx, "get", kind, "-A", "-o", `jsonpath={range .items[?(@.metadata.finalizers)]}{.metadata.namespace}{" "}{.metadata.name}{"\n"}{end}`)
		if err != nil {
			continue // a CRD not served (any more) has nothing to clear
		}
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			f := strings.Fields(line)
			if len(f) == 0 {
				continue
			}
			args := []string{"patch", kind, f[len(f)-1], "--type=merge", "-p", `{"metadata":{"finalizers":null}}`}
			if len(f) == 2 {
				args = append(args, "-n", f[0])
			}
			if _, err := e.Kubectl(ctx, args...); err != nil && !strings.Contains(err.Error(), "NotFound") {
				return err
			}
		}
	}
	return nil
}

// PortForward forwards hostAddr (loopback; port 0 picks one) to port of
// namespace's Service name through the API server, as `kubectl
// port-forward` does for a user: the way to reach a pod of a cluster the
// host has no route into. It returns the address and a stop function.
func (e *External) PortForward(ctx context.Context, hostAddr, namespace, service string, port int) (string, func(), error) {
	host, hostPort, ok := strings.Cut(hostAddr, ":")
	if !ok {
		return "", nil, fmt.Errorf("%q is not host:port", hostAddr)
	}
	ctx, cancel := context.WithCancel(ctx)
	cmd := e.command(ctx, e.KubectlBin, "--kubeconfig="+e.Kubeconfig, "-n", namespace, "port-forward",
		"--address="+host, "service/"+service, fmt.Sprintf("%s:%d", hostPort, port))
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		return "", nil, err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		cancel()
		return "", nil, err
	}
	stop := func() { cancel(); _ = cmd.Wait() }
	// kubectl prints "Forwarding from 127.0.0.1:P -> port" once it listens.
	got := make(chan string, 1)
	go func() {
		buf := make([]byte, 4096)
		var seen strings.Builder
		for {
			k, err := out.Read(buf)
			seen.Write(buf[:k])
			if _, rest, ok := strings.Cut(seen.String(), "Forwarding from "); ok {
				if addr, _, ok := strings.Cut(rest, " ->"); ok {
					got <- addr
					_, _ = io.Copy(io.Discard, out)
					return
				}
			}
			if err != nil {
				got <- ""
				return
			}
		}
	}()
	select {
	case addr := <-got:
		if addr == "" {
			stop()
			return "", nil, fmt.Errorf("kubectl port-forward to %s/%s ended before it listened", namespace, service)
		}
		return addr, stop, nil
	case <-time.After(30 * time.Second):
		stop()
		return "", nil, fmt.Errorf("kubectl port-forward to %s/%s did not listen within 30 s", namespace, service)
	}
}

// stillThere is WaitGone's error: the objects left when its time ran out.
type stillThere struct {
	limit time.Duration
	left  []string
}

func (s stillThere) Error() string {
	return fmt.Sprintf("still there after %s: %s", s.limit, strings.Join(s.left, ", "))
}

// onlyRevisions says whether every object of left (kubectl's kind.group/name)
// is a package revision.
func onlyRevisions(left []string) bool {
	return !slices.ContainsFunc(left, func(o string) bool {
		kind, _, _ := strings.Cut(o, ".")
		return kind != "providerrevision" && kind != "functionrevision" && kind != "configurationrevision"
	})
}
