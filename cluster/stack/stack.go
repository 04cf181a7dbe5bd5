// Package stack installs this project onto a running node (package
// cluster/node) the way README.md tells a user to: Crossplane from its Helm
// chart, then our packages with `crossplane xpkg install`, pulled from the
// node's registry where they were pushed with `crossplane xpkg push`. It also
// runs the Cloud Armor emulator as a pod behind a Service. `make run`
// (cluster/local), `make test`'s shared node and test/node all install
// through Install, so what a user types is what every one of them runs.
package stack

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
)

// A Package is one of ours as hack/xpkg.sh writes it (File, under the xpkg
// folder) and the repository it is published under.
type Package struct{ File, Repo string }

// Packages are the provider, the function and the Configuration. README.md
// installs xpkg.crossplane.io/<Repo>:<PackageTag>; the node's registry serves
// <Repo>:<PackageTag> and ImageConfig points xpkg.crossplane.io/ at it.
var Packages = []Package{
	{"linux_amd64/provider-cloudarmor.xpkg", "armorplane/provider-cloudarmor"},
	{"linux_amd64/function-ipallowlist.xpkg", "armorplane/function-ipallowlist"},
	{"configuration-ipallowlist.xpkg", "armorplane/configuration-ipallowlist"},
}

const (
	// PackageTag is the version README.md installs: CHANGELOG's first release.
	PackageTag = "v0.1.0"
	// AutoReadyRepo is the Configuration's dependency on function-auto-ready.
	AutoReadyRepo = "crossplane-contrib/function-auto-ready"
	// AutoReadyTag is the function-auto-ready version `make tools` builds.
	AutoReadyTag = "v0.5.0"
	// ProviderSA is the provider's ServiceAccount, named by the
	// DeploymentRuntimeConfig of cluster/rbac/provider-runtime.yaml.
	ProviderSA = "system:serviceaccount:crossplane-system:" + rbac.ProviderName
)

// ImageConfig points the packages' registry at registry (as the cluster
// names it): Crossplane then pulls them, resolves the Configuration's
// dependencies (listing the tags of each) and the kubelet pulls their images
// from there.
func ImageConfig(registry string) string {
	return fmt.Sprintf(`apiVersion: pkg.crossplane.io/v1beta1
kind: ImageConfig
metadata: {name: %s}
spec:
  matchImages: [{type: Prefix, prefix: xpkg.crossplane.io/}]
  rewriteImage: {prefix: %s/}
`, ImageConfigName, registry)
}

// ImageConfigName names the ImageConfig Install applies.
const ImageConfigName = "local-registry"

// A Cluster is where Install installs: make run's node (*node.Node), or a
// cluster the user already has (External).
type Cluster interface {
	// Kubectl runs kubectl against the cluster and returns its stdout.
	Kubectl(ctx context.Context, args ...string) (string, error)
	// Apply applies manifests.
	Apply(ctx context.Context, manifests string) error
	// ClientEnv is the environment of helm, kubectl and the crossplane CLI
	// run against the cluster (KUBECONFIG, their caches).
	ClientEnv() []string
	// WorkDir holds the clients' caches and files of the run.
	WorkDir() string
	// Registry is where the host pushes images and the cluster pulls them.
	Registry() node.Registry
}

// The emulator runs as a pod from its own image, behind a Service the
// provider reaches through the cluster DNS.
const (
	EmulatorNamespace = "cloudarmor-emulator"
	EmulatorPort      = 8787
	// DataPlanePort is where the emulator serves its data plane when
	// EmulatorArgs ask for it (--data-plane, docs/evaluation.md).
	DataPlanePort = 8788
	// EmulatorEndpoint is the compute API base URL a ProviderConfig names.
	EmulatorEndpoint = "http://cloudarmor-emulator.cloudarmor-emulator.svc.cluster.local:8787/compute/v1/"
)

// ProviderArgs are the provider's flags on this stack: extra after what the
// stack, as the platform team, grants tenants so the examples can run:
// namespaced ProviderConfigs may name the emulator it installs as their
// endpoint.
func ProviderArgs(extra []string) []string {
	return append([]string{"--namespaced-endpoint=" + EmulatorEndpoint}, extra...)
}

func emulatorManifests(image string, args []string) string {
	quoted := make([]string, 0, len(args)+1)
	for _, a := range append([]string{fmt.Sprintf("--listen=:%d", EmulatorPort)}, args...) {
		quoted = append(quoted, fmt.Sprintf("%q", a))
	}
	return fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata: {name: %[1]s}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: cloudarmor-emulator, namespace: %[1]s}
spec:
  selector: {matchLabels: {app: cloudarmor-emulator}}
  template:
    metadata: {labels: {app: cloudarmor-emulator}}
    spec:
      securityContext: {runAsNonRoot: true}
      containers:
      - name: emulator
        image: %[2]s
        args: [%[3]s]
        ports: [{name: api, containerPort: %[4]d}, {name: data-plane, containerPort: %[5]d}]
        readinessProbe: {httpGet: {path: /_emulator/healthz, port: %[4]d}, periodSeconds: 1}
---
apiVersion: v1
kind: Service
metadata: {name: cloudarmor-emulator, namespace: %[1]s}
spec:
  selector: {app: cloudarmor-emulator}
  ports: [{name: api, port: %[4]d, targetPort: %[4]d}, {name: data-plane, port: %[5]d, targetPort: %[5]d}]
`, EmulatorNamespace, image, strings.Join(quoted, ", "), EmulatorPort, DataPlanePort)
}

// Options configure Install.
type Options struct {
	Cluster Cluster
	// PushCrossplane pushes Crossplane core's image to the cluster's
	// registry first (the node's registry has it from its boot).
	PushCrossplane bool
	Tools          node.Tools
	// RepoRoot is this repository's root (cluster/rbac/provider-runtime.yaml).
	RepoRoot string
	// Crossplane is the crossplane CLI.
	Crossplane string
	// XpkgDir holds the packages hack/xpkg.sh built (Packages' files).
	XpkgDir string
	// Emulator is the emulator binary (CGO_ENABLED=0), run as a pod with
	// EmulatorArgs besides --listen.
	Emulator     string
	EmulatorArgs []string
	// AutoReady and AutoReadyMeta are function-auto-ready's binary and its
	// package/crossplane.yaml (AutoReadyFiles finds them).
	AutoReady, AutoReadyMeta string
	// HelmSet are extra `--set` values for the Crossplane chart, as a user
	// passes them (e.g. core's circuit breaker args).
	HelmSet []string
	// ProviderArgs are added to the provider's container through the
	// DeploymentRuntimeConfig the README applies, as a user sets flags.
	ProviderArgs []string
	// Readme are the install commands run, ReadmeInstall unless set: a test
	// installs as an earlier README said.
	Readme []string
	// PreviousRelease: the provider installed is a release from before the
	// grant flags (--namespaced-endpoint), which would refuse them: it gets
	// ProviderArgs only.
	PreviousRelease bool
	Logf            func(format string, args ...any)
}

// A Lap is one timed step of Install.
type Lap struct {
	Step     string
	Duration time.Duration
}

// Installed is what Install did.
type Installed struct {
	// Ran are the README commands as they ran on the node, with why they
	// differ when they do.
	Ran []Ran
	// Laps time each step.
	Laps []Lap
	// EmulatorIP is the emulator Service's cluster IP (forward to it with
	// node.Forward: names are not looked up on the host).
	EmulatorIP string
}

// Ran is one README command as it ran on the node.
type Ran struct {
	README, Tool string
	Args         []string
	Why          string
	Output       string
}

// Install pushes our packages, function-auto-ready and the emulator into the
// node's registry, starts the emulator, and runs README.md's install commands
// (ReadmeInstall, translated by OnNode), then waits until every package is
// Installed and Healthy and the emulator is available.
func Install(ctx context.Context, o Options) (*Installed, error) {
	if o.Logf == nil {
		o.Logf = func(string, ...any) {}
	}
	for _, p := range Packages {
		if _, err := os.Stat(filepath.Join(o.XpkgDir, p.File)); err != nil {
			return nil, fmt.Errorf("%w: run `make xpkg` (PLATFORMS=linux/amd64 is enough)", err)
		}
	}
	for _, f := range []string{o.Emulator, o.AutoReady, o.AutoReadyMeta, o.Crossplane} {
		if _, err := os.Stat(f); err != nil {
			return nil, err
		}
	}
	n := o.Cluster
	reg := n.Registry()
	in := &Installed{}
	lap := func(step string, since time.Time) {
		in.Laps = append(in.Laps, Lap{step, time.Since(since)})
		o.Logf("stack: %s (%s)", step, time.Since(since).Round(10*time.Millisecond))
	}
	run, err := clients(ctx, o)
	if err != nil {
		return nil, err
	}

	// Publish our three packages with the real CLI, function-auto-ready (the
	// Configuration's third dependency) and the emulator as images.
	s := time.Now()
	if o.PushCrossplane {
		if _, err := node.PushCrossplane(ctx, o.Tools, reg); err != nil {
			return in, err
		}
	}
	if err := pushPackages(run, o.XpkgDir, reg, PackageTag); err != nil {
		return in, err
	}
	if _, err := node.PushImage(ctx, reg, AutoReadyRepo, AutoReadyTag, []string{"/function"},
		map[string]string{"/function": o.AutoReady, "/package.yaml": o.AutoReadyMeta}); err != nil {
		return in, err
	}
	emuImage, err := node.PushImage(ctx, reg, "armorplane/cloudarmor-emulator", PackageTag, []string{"/emulator"},
		map[string]string{"/emulator": o.Emulator})
	if err != nil {
		return in, err
	}
	lap("packages pushed (crossplane xpkg push) and images built", s)
	if err := n.Apply(ctx, emulatorManifests(emuImage, o.EmulatorArgs)); err != nil {
		return in, err
	}

	// Install as README.md says, with the ImageConfig first.
	chart := filepath.Join(o.Tools.CrossplaneModule, "cluster/charts/crossplane")
	imageConfigured := false
	readme := o.Readme
	if readme == nil {
		readme = ReadmeInstall
	}
	provider, err := InstalledProvider(readme)
	if err != nil {
		return in, err
	}
	for _, c := range readme {
		st, err := OnNode(c, chart, o.RepoRoot, reg.Pull)
		if err != nil {
			return in, err
		}
		if st.Tool == "" {
			in.Ran = append(in.Ran, Ran{README: c, Why: st.Why})
			continue
		}
		if st.Tool == "helm" {
			for _, v := range o.HelmSet {
				st.Args = append(st.Args, "--set", v)
			}
		}
		if st.Tool == "crossplane" && !imageConfigured {
			if err := n.Apply(ctx, ImageConfig(reg.Pull)); err != nil {
				return in, err
			}
			imageConfigured = true
		}
		s := time.Now()
		out, err := run(st.Tool, st.Args...)
		if err != nil {
			return in, err
		}
		lap(c, s)
		in.Ran = append(in.Ran, Ran{README: c, Tool: st.Tool, Args: st.Args, Why: st.Why, Output: strings.TrimSpace(out)})
		args := ProviderArgs(o.ProviderArgs)
		if o.PreviousRelease {
			args = o.ProviderArgs
		}
		if st.Tool == "kubectl" && len(args) > 0 {
			if _, err := n.Kubectl(ctx, "patch", "deploymentruntimeconfig", rbac.ProviderName, "--type=merge", "-p", providerArgsPatch(args)); err != nil {
				return in, err
			}
		}
	}

	// The dependencies the Configuration pulled in, by the names the
	// Composition calls them.
	s = time.Now()
	for _, obj := range []string{"configuration/armorplane-configuration-ipallowlist", "provider/" + provider,
		"function/armorplane-function-ipallowlist", "function/crossplane-contrib-function-auto-ready"} {
		for _, cond := range []string{"Installed", "Healthy"} {
			if _, err := n.Kubectl(ctx, "wait", obj, "--for=condition="+cond, "--timeout=5m"); err != nil {
				out, _ := n.Kubectl(ctx, "get", "pkg,pods,lock", "-A", "-o", "wide")
				return in, fmt.Errorf("%s not %s: %w\n%s", obj, cond, err, out)
			}
		}
	}
	// One Provider of our package: had the resolver found none of the name
	// it derives, it would have installed a second one. (A cluster the user
	// has may hold other providers.)
	providers, err := n.Kubectl(ctx, "get", "providers.pkg.crossplane.io", "-o",
		`jsonpath={range .items[*]}{.metadata.name}={.spec.package}{"\n"}{end}`)
	if err != nil {
		return in, err
	}
	if ours := ofPackage(strings.Fields(providers), Packages[0].Repo); len(ours) != 1 {
		return in, fmt.Errorf("want one Provider of %s, %s, have %v", Packages[0].Repo, provider, ours)
	}
	lap("dependencies Installed and Healthy", s)
	if _, err := n.Kubectl(ctx, "-n", EmulatorNamespace, "rollout", "status", "deployment/cloudarmor-emulator", "--timeout=3m"); err != nil {
		return in, err
	}
	if in.EmulatorIP, err = n.Kubectl(ctx, "-n", EmulatorNamespace, "get", "service", "cloudarmor-emulator", "-o", "jsonpath={.spec.clusterIP}"); err != nil {
		return in, err
	}
	return in, nil
}

// PushPackages pushes the packages in o.XpkgDir to the cluster's registry as
// version tag with `crossplane xpkg push`, as Install pushes PackageTag: an
// upgrade publishes a new version beside the installed one.
func PushPackages(ctx context.Context, o Options, tag string) error {
	run, err := clients(ctx, o)
	if err != nil {
		return err
	}
	return pushPackages(run, o.XpkgDir, o.Cluster.Registry(), tag)
}

func pushPackages(run runFunc, dir string, reg node.Registry, tag string) error {
	for _, p := range Packages {
		if _, err := run("crossplane", "xpkg", "push", "-f", filepath.Join(dir, p.File), reg.Push+"/"+p.Repo+":"+tag); err != nil {
			return err
		}
	}
	return nil
}

// runFunc runs helm, kubectl or the crossplane CLI against the cluster and
// returns its output.
type runFunc func(tool string, args ...string) (string, error)

// clients runs the clients with their Docker config and caches under the
// cluster's work directory.
func clients(ctx context.Context, o Options) (runFunc, error) {
	home := filepath.Join(o.Cluster.WorkDir(), "client/home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	return func(tool string, args ...string) (string, error) {
		bin := map[string]string{"helm": o.Tools.Helm, "kubectl": o.Tools.Kubectl, "crossplane": o.Crossplane}[tool]
		cmd := exec.CommandContext(ctx, bin, args...)
		cmd.Env = append(o.Cluster.ClientEnv(), "HOME="+home, "DOCKER_CONFIG="+filepath.Join(home, ".docker"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		out, err := cmd.CombinedOutput()
		if err != nil {
			return string(out), fmt.Errorf("%s %s: %w\n%s", tool, strings.Join(args, " "), err, out)
		}
		return string(out), nil
	}, nil
}

// providerArgsPatch sets the provider container's args in the
// DeploymentRuntimeConfig (Crossplane names that container package-runtime;
// the Deployment template needs a selector, which Crossplane fills in).
func providerArgsPatch(args []string) string {
	b, _ := json.Marshal(map[string]any{"spec": map[string]any{"deploymentTemplate": map[string]any{"spec": map[string]any{
		"selector": map[string]any{},
		"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "package-runtime", "args": args},
		}}},
	}}}})
	return string(b)
}

// AutoReadyFiles are function-auto-ready's binary (fromEnv, else the one
// `make tools` builds beside crossplane-core) and its package metadata (its
// module, which that build downloaded).
func AutoReadyFiles(tools node.Tools, fromEnv string) (bin, meta string, err error) {
	bin = fromEnv
	if bin == "" {
		bin = filepath.Join(filepath.Dir(filepath.Dir(filepath.Dir(tools.CrossplaneCore))),
			"bin/function-auto-ready-"+AutoReadyTag+"/function-auto-ready")
	}
	modcache, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		return "", "", fmt.Errorf("go env GOMODCACHE: %w", err)
	}
	meta = filepath.Join(strings.TrimSpace(string(modcache)),
		"github.com/crossplane-contrib/function-auto-ready@"+AutoReadyTag+"/package/crossplane.yaml")
	var errs []error
	for _, f := range []string{bin, meta} {
		if _, err := os.Stat(f); err != nil {
			errs = append(errs, fmt.Errorf("function-auto-ready %s (make tools): %w", AutoReadyTag, err))
		}
	}
	return bin, meta, errors.Join(errs...)
}

// ReadmeInstall is the install section of README.md, the commands a user
// runs in order. Install runs them on the node (through OnNode); a test
// checks README.md shows exactly these.
var ReadmeInstall = []string{
	"helm repo add crossplane-stable https://charts.crossplane.io/stable",
	"helm install crossplane crossplane-stable/crossplane --version 2.4.0 --namespace crossplane-system --create-namespace --wait",
	"kubectl apply -f provider-runtime.yaml",
	"crossplane xpkg install provider xpkg.crossplane.io/armorplane/provider-cloudarmor:v0.1.0 armorplane-provider-cloudarmor --runtime-config=armorplane-provider-cloudarmor --wait=5m",
	"crossplane xpkg install configuration xpkg.crossplane.io/armorplane/configuration-ipallowlist:v0.1.0 --wait=5m",
}

// ofPackage returns the names of the packages, listed as name=reference,
// whose reference is of repository repo (xpkg.crossplane.io/<repo>, any
// version).
func ofPackage(packages []string, repo string) []string {
	var out []string
	for _, p := range packages {
		name, ref, _ := strings.Cut(p, "=")
		if r, _, _ := strings.Cut(ref, ":"); strings.HasSuffix(r, "/"+repo) {
			out = append(out, name)
		}
	}
	return out
}

// InstalledProvider is the name the `crossplane xpkg install provider`
// command of cmds gives the Provider.
func InstalledProvider(cmds []string) (string, error) {
	for _, c := range cmds {
		f := strings.Fields(c)
		if len(f) > 5 && f[0] == "crossplane" && f[1] == "xpkg" && f[2] == "install" && f[3] == "provider" && !strings.HasPrefix(f[5], "-") {
			return f[5], nil
		}
	}
	return "", errors.New("no `crossplane xpkg install provider PACKAGE NAME` among the install commands")
}

// ReadmeRuntimeFile is the file name the README's `kubectl apply -f` uses for
// cluster/rbac/provider-runtime.yaml, which it shows whole.
const ReadmeRuntimeFile = "provider-runtime.yaml"

// A Step is one README command as the node runs it: a tool and its
// arguments, or nothing to run.
type Step struct {
	Tool string // helm, kubectl or crossplane
	Args []string
	Why  string // why it runs differently on the node, if it does
}

// OnNode translates a README command for the node, or a cluster the user
// has, whose images come from registry. The registry is the one difference:
// the node has no network, so the Crossplane chart comes from its module
// (the same version the README names; the chart there is unversioned) with
// the image from registry, and the packages come from registry through
// ImageConfig, which Install applies first; the `crossplane xpkg install`
// commands run unchanged.
func OnNode(cmd, chartDir, repoRoot, registry string) (Step, error) {
	f := strings.Fields(cmd)
	switch {
	case len(f) > 3 && f[0] == "helm" && f[1] == "repo" && f[2] == "add":
		return Step{Why: "no chart repository: the chart is in the Crossplane module"}, nil
	case len(f) > 3 && f[0] == "helm" && f[1] == "install":
		var args []string
		for i := 1; i < len(f); i++ {
			switch {
			case f[i] == "crossplane-stable/crossplane":
				args = append(args, chartDir)
			case f[i] == "--version" && i+1 < len(f):
				if want := strings.TrimPrefix(node.CrossplaneVersion, "v"); f[i+1] != want {
					return Step{}, fmt.Errorf("%q: the node runs Crossplane %s", cmd, want)
				}
				i++
			default:
				args = append(args, f[i])
			}
		}
		args = append(args, "--set", "image.repository="+registry+"/crossplane",
			"--set", "image.tag="+node.CrossplaneVersion, "--timeout", "5m")
		return Step{Tool: "helm", Args: args, Why: "chart from the module, image from the node's registry"}, nil
	case len(f) == 4 && f[0] == "kubectl" && f[1] == "apply" && f[2] == "-f" && f[3] == ReadmeRuntimeFile:
		return Step{Tool: "kubectl", Args: []string{"apply", "-f", filepath.Join(repoRoot, rbac.ProviderRuntimeFile)}}, nil
	case len(f) > 2 && f[0] == "crossplane" && f[1] == "xpkg" && f[2] == "install":
		return Step{Tool: "crossplane", Args: f[1:]}, nil
	}
	return Step{}, fmt.Errorf("no translation for the README command %q", cmd)
}
