// Command local runs `make run`: it boots a real single-node Kubernetes cluster
// on this machine (package cluster/node: etcd, kube-apiserver, the kubelet with
// containerd, CoreDNS, all in namespaces of their own with no route off the
// machine), installs Crossplane from its Helm chart and our packages with
// `crossplane xpkg install` exactly as README.md says (package cluster/stack),
// runs the Cloud Armor emulator as a pod, applies the examples and an
// IPAllowlist of the node itself, waits until all of it is Ready, prints it,
// and tears everything down on Ctrl-C, leaving the host as it found it.
//
// With --ready-file it is `make test`'s shared node: once everything is Ready
// it writes the file (a JSON Attachment the suites read) and runs until
// SIGTERM.
//
// With --kubeconfig and --registry (`make run KUBECONFIG=… REGISTRY=…`) it
// boots nothing: it installs the same way into a cluster the user already
// has, every image pushed to that registry, and on Ctrl-C removes all it
// installed (see runExternal).
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
)

// config holds the command line.
type config struct {
	binDir    string
	xpkgDir   string
	examples  string
	readyFile string
	// demo applies the examples and the demo Nodes.
	demo bool
	// helmSet are extra --set values for the Crossplane chart.
	helmSet []string
	// providerArgs are added to the provider's container through its
	// DeploymentRuntimeConfig.
	providerArgs []string
	// kubeconfig names a cluster the user has: install there, boot nothing.
	kubeconfig string
	// registry is the registry that cluster pulls from; pushRegistry the
	// same registry as this host reaches it (default: registry).
	registry, pushRegistry string
	// plainHTTP pushes to the registry over HTTP.
	plainHTTP bool
}

type repeated []string

func (s *repeated) String() string     { return strings.Join(*s, ",") }
func (s *repeated) Set(v string) error { *s = append(*s, v); return nil }

func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.StringVar(&c.binDir, "bin-dir", "_output/bin", "folder holding the emulator binary (make build)")
	fs.StringVar(&c.xpkgDir, "xpkg-dir", "_output/xpkg", "folder of the packages `make xpkg` builds")
	fs.StringVar(&c.examples, "examples", "examples", "folder of examples to apply")
	fs.StringVar(&c.readyFile, "ready-file", "", "once Ready, write how to reach the node here (JSON) and run until SIGTERM")
	fs.BoolVar(&c.demo, "demo", true, "apply the examples, demo Nodes and an IPAllowlist of the node (false: only install, as make test's shared node)")
	fs.Var((*repeated)(&c.helmSet), "helm-set", "a --set value for the Crossplane chart (repeatable), e.g. args={--circuit-breaker-burst=500}")
	fs.Var((*repeated)(&c.providerArgs), "provider-arg", "an argument for the provider's container, set through its DeploymentRuntimeConfig (repeatable)")
	fs.StringVar(&c.kubeconfig, "kubeconfig", "", "install into the cluster of this kubeconfig instead of booting a node (needs --registry)")
	fs.StringVar(&c.registry, "registry", "", "with --kubeconfig: host[:port] of a registry the cluster pulls from and this host can push to anonymously")
	fs.StringVar(&c.pushRegistry, "push-registry", "", "with --kubeconfig: the same registry as this host reaches it, when that differs (default --registry)")
	fs.BoolVar(&c.plainHTTP, "plain-http", false, "with --kubeconfig: push to the registry over HTTP, not HTTPS")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if (c.kubeconfig == "") != (c.registry == "") {
		return c, fmt.Errorf("--kubeconfig and --registry go together (make run KUBECONFIG=… REGISTRY=…)")
	}
	if c.pushRegistry == "" {
		c.pushRegistry = c.registry
	}
	return c, nil
}

func main() {
	cfg, err := parseFlags(os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(2)
	}
	// Ctrl-C, kill and a closed terminal all tear down; so does a run whose
	// stdout went away (`make run | tee log`, tee stopped by the same
	// Ctrl-C): its lines are lost, its teardown is not.
	ctx, stop := node.NotifyContext(context.Background())
	defer stop()
	do := run
	if cfg.kubeconfig != "" {
		do = runExternal
	}
	if err := do(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "make run:", err)
		os.Exit(1)
	}
}

// run brings everything up, waits for ctx to end and tears it down. It writes
// to out but ignores its errors: the teardown must not depend on it.
func run(ctx context.Context, cfg config, out io.Writer) error {
	if err := node.RequireRoot(); err != nil {
		return fmt.Errorf("%w (it boots a real node: namespaces, mounts, containerd, a bridge)", err)
	}
	start := time.Now()
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	tmp, err := node.MkdirTemp("local-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	fmt.Fprintln(out, "resolving the node's tools (built once into the tool cache)…")
	tools, err := node.ResolveTools(root, tmp)
	if err != nil {
		return err
	}
	logf := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	n, err := node.Up(ctx, node.Config{Tools: tools, Logf: logf, Lock: node.InheritedLock()})
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(out, "tearing the node down…")
		if err := n.Down(); err != nil {
			fmt.Fprintf(out, "teardown: %v\n", err)
			return
		}
		fmt.Fprintln(out, "node down; the host is as it was")
	}()

	d, err := install(ctx, n, tools, root, cfg, logf)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "\neverything Ready %s after `make run` started its node\n", time.Since(start).Round(100*time.Millisecond))
	if pods, err := n.Kubectl(ctx, "get", "pods", "-A"); err == nil {
		fmt.Fprintf(out, "\n$ kubectl get pods -A\n%s", pods)
	}
	if cfg.demo {
		d.printTable(ctx, out)
	}

	if cfg.readyFile != "" {
		a := n.Attachment(map[string]string{"emulatorIP": d.emulatorIP, "emulator": d.emulator})
		if err := node.WriteAttachment(cfg.readyFile, a); err != nil {
			return err
		}
		logf("ready: %s", cfg.readyFile)
	} else {
		d.printNext(out, n.Kubeconfig, tools.Kubectl)
	}
	<-ctx.Done()
	fmt.Fprintln(out, "\nshutting down…")
	if cfg.readyFile != "" {
		_ = os.Remove(cfg.readyFile)
	}
	return nil
}

// install installs the stack on n and applies the demo; it returns what the
// demo needs to print and serve.
func install(ctx context.Context, n *node.Node, tools node.Tools, root string, cfg config, logf func(string, ...any)) (*demo, error) {
	o, err := installOptions(tools, root, cfg, logf)
	if err != nil {
		return nil, err
	}
	o.Cluster = n
	in, err := stack.Install(ctx, o)
	if err != nil {
		return nil, err
	}
	if !cfg.demo {
		return &demo{emulatorIP: in.EmulatorIP}, nil
	}
	target := fmt.Sprintf("%s:%d", in.EmulatorIP, stack.EmulatorPort)
	emulator, err := n.Forward(emulatorHostAddr, target)
	if err != nil {
		if emulator, err = n.Forward("127.0.0.1:0", target); err != nil {
			return nil, err
		}
		logf("%s is taken; the emulator is at %s", emulatorHostAddr, emulator)
	}
	dataPlane, err := forwardFree(n, dataPlaneHostAddr, fmt.Sprintf("%s:%d", in.EmulatorIP, stack.DataPlanePort))
	if err != nil {
		return nil, err
	}
	if dataPlane != dataPlaneHostAddr {
		logf("%s is taken; the data plane is at %s", dataPlaneHostAddr, dataPlane)
	}
	d, _, err := startDemo(ctx, demoTarget{cluster: n, kubeconfig: n.Kubeconfig, emulator: emulator, dataPlane: dataPlane,
		nodeName: node.Name, fakeNodes: true}, in, root, cfg, logf)
	return d, err
}

// forwardFree forwards hostAddr to target in n, or a free port when
// hostAddr is taken; it returns the address it listens on.
func forwardFree(n *node.Node, hostAddr, target string) (string, error) {
	if addr, err := n.Forward(hostAddr, target); err == nil {
		return addr, nil
	}
	return n.Forward("127.0.0.1:0", target)
}

// installOptions are stack.Install's options from the command line and the
// environment make run sets, with no Cluster yet.
func installOptions(tools node.Tools, root string, cfg config, logf func(string, ...any)) (stack.Options, error) {
	autoReady, autoReadyMeta, err := stack.AutoReadyFiles(tools, os.Getenv("FUNCTION_AUTO_READY_BIN"))
	if err != nil {
		return stack.Options{}, err
	}
	cli := os.Getenv("CROSSPLANE_BIN")
	if cli == "" {
		return stack.Options{}, fmt.Errorf("CROSSPLANE_BIN is not set (make run sets it to the crossplane CLI it builds)")
	}
	emulatorBin, err := filepath.Abs(filepath.Join(cfg.binDir, "emulator"))
	if err != nil {
		return stack.Options{}, err
	}
	xpkg, err := filepath.Abs(cfg.xpkgDir)
	if err != nil {
		return stack.Options{}, err
	}
	return stack.Options{
		Tools: tools, RepoRoot: root, Crossplane: cli, XpkgDir: xpkg,
		Emulator: emulatorBin, EmulatorArgs: []string{"--op-latency=" + demoOpLatency.String(), "--auth=any",
			// The NetworkEdgeSecurityService example needs Cloud Armor
			// Enterprise: the demo's projects are enrolled.
			"--default-tier=CA_ENTERPRISE_PAYGO",
			// The data plane "Try next" curls. Every request reaches the
			// pod from the node's forwarder, so the demo names its client
			// in a header.
			fmt.Sprintf("--data-plane=:%d", stack.DataPlanePort), "--data-plane-trust-client-ip-header"},
		AutoReady: autoReady, AutoReadyMeta: autoReadyMeta, HelmSet: cfg.helmSet, ProviderArgs: append(dialGrants(cfg.demo), cfg.providerArgs...), Logf: logf,
	}, nil
}

// dialGrants are the provider flags that let it reach, on a tenant's behalf,
// what the local stack runs inside the cluster: with the demo, the node's own
// API server, which the fleet example reads as its workload cluster
// (fleetServer). Everything else in the cluster stays refused. (The
// emulator, a namespaced ProviderConfig's endpoint, is granted by origin:
// stack.ProviderArgs.)
func dialGrants(demo bool) []string {
	if !demo {
		return nil
	}
	f, err := url.Parse(fleetServer)
	if err != nil {
		panic(err) // a constant
	}
	return []string{"--allow-dial-host=" + f.Hostname()}
}
