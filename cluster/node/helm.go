package node

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"
)

// CrossplaneNamespace is where the chart installs Crossplane.
const CrossplaneNamespace = "crossplane-system"

// InstallCrossplane installs Crossplane from the Helm chart in its module with
// the helm CLI, as a user would, with only the image taken from the node's
// registry; everything else (the RBAC manager, webhooks, the Deployment package
// runtime) is the chart's default. extra are further `--set` values.
func (n *Node) InstallCrossplane(ctx context.Context, extra ...string) error {
	chart := filepath.Join(n.cfg.Tools.CrossplaneModule, "cluster/charts/crossplane")
	args := []string{"install", "crossplane", chart,
		"--namespace", CrossplaneNamespace, "--create-namespace",
		"--set", "image.repository=" + RegistryHost + "/crossplane",
		"--set", "image.tag=" + CrossplaneVersion,
		"--wait", "--timeout", "5m"}
	for _, e := range extra {
		args = append(args, "--set", e)
	}
	start := time.Now()
	cmd := exec.CommandContext(ctx, n.cfg.Tools.Helm, args...)
	cmd.Env = n.ClientEnv()
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("helm %v: %w\n%s", args, err, out)
	}
	n.cfg.Logf("node: Crossplane installed by helm in %s", time.Since(start).Round(10*time.Millisecond))
	return nil
}
