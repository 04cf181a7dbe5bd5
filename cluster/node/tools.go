package node

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Tools are the binaries and files a node runs, all built or fetched by
// cluster/toolchain/build.sh into the user cache.
type Tools struct {
	Etcd, KubeAPIServer, KubeControllerManager, KubeScheduler string
	Kubelet, KubeProxy, Kubectl                               string
	CoreDNS, CrossplaneCore, Helm                             string
	// Debs is the root the node's Debian packages (containerd, runc, the CNI
	// plugins, iptables, nft) were extracted into.
	Debs string
	// Pause is a static build of ./cluster/node/pause.
	Pause string
	// CrossplaneModule is the crossplane/v2 module folder: its cluster/crds go
	// into the core image and cluster/charts/crossplane is the Helm chart.
	CrossplaneModule string
}

// ResolveTools asks cluster/toolchain/build.sh (under repo) for every tool,
// which builds only what is not cached yet, and builds pause into dir.
func ResolveTools(repo, dir string) (Tools, error) {
	var t Tools
	one := func(name string) ([]string, error) {
		cmd := exec.Command(filepath.Join(repo, "cluster/toolchain/build.sh"), name)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("cluster/toolchain/build.sh %s: %w\n%s", name, err, stderr.Bytes())
		}
		return strings.Fields(string(out)), nil
	}
	single := map[string]*string{
		"etcd": &t.Etcd, "kube-apiserver": &t.KubeAPIServer, "kube-controller-manager": &t.KubeControllerManager,
		"kubectl": &t.Kubectl, "coredns": &t.CoreDNS, "crossplane-core": &t.CrossplaneCore, "helm": &t.Helm,
		"node-debs": &t.Debs,
	}
	for name, p := range single {
		out, err := one(name)
		if err != nil {
			return t, err
		}
		if len(out) != 1 {
			return t, fmt.Errorf("cluster/toolchain/build.sh %s printed %q, want one path", name, out)
		}
		*p = out[0]
	}
	out, err := one("kube-node")
	if err != nil {
		return t, err
	}
	if len(out) != 3 {
		return t, fmt.Errorf("cluster/toolchain/build.sh kube-node printed %q, want three paths", out)
	}
	t.Kubelet, t.KubeScheduler, t.KubeProxy = out[0], out[1], out[2]

	t.Pause = filepath.Join(dir, "pause")
	build := exec.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", t.Pause, "./cluster/node/pause")
	build.Dir = repo
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if b, err := build.CombinedOutput(); err != nil {
		return t, fmt.Errorf("go build ./cluster/node/pause: %w\n%s", err, b)
	}

	mod := exec.Command("go", "mod", "download", "-json", "github.com/crossplane/crossplane/v2@v2.4.0")
	mod.Dir = filepath.Join(repo, "cluster/toolchain/crossplane-core")
	b, err := mod.Output()
	if err != nil {
		return t, fmt.Errorf("go mod download github.com/crossplane/crossplane/v2@v2.4.0: %w", err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		line = strings.TrimSpace(line)
		if v, ok := strings.CutPrefix(line, `"Dir": "`); ok {
			t.CrossplaneModule = strings.TrimSuffix(v, `",`)
		}
	}
	if t.CrossplaneModule == "" {
		return t, fmt.Errorf("go mod download printed no Dir for github.com/crossplane/crossplane/v2@v2.4.0")
	}
	return t, nil
}
