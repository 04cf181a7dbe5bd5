package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/cluster/stack"
)

// demoKinds are the IPAllowlists and our managed resources: every one must be
// gone before Crossplane and the provider are, or its finalizer keeps it (and
// its CRD) forever.
var demoKinds = []string{"ipallowlists.platform.armorplane.io", "securitypolicyallowlists.cloudarmor.armorplane.io", "securitypolicyattachments.cloudarmor.armorplane.io",
	"securitypolicies.cloudarmor.armorplane.io",
	"securitypolicyrules.cloudarmor.armorplane.io", "addresssets.cloudarmor.armorplane.io",
	"addressgroups.cloudarmor.armorplane.io", "networkedgesecurityservices.cloudarmor.armorplane.io",
	"projectcloudarmortiers.cloudarmor.armorplane.io",
	"organizationsecuritypolicyassociations.cloudarmor.armorplane.io", "organizationsecuritypolicyrules.cloudarmor.armorplane.io",
	"organizationsecuritypolicies.cloudarmor.armorplane.io",
	// Last: the provider lets a config go once nothing uses it.
	"providerconfigs.armorplane.io", "clusterproviderconfigs.armorplane.io"}

// runExternal is `make run KUBECONFIG=… REGISTRY=…`: the install and demo of
// run, into a cluster the user already has. Every image (Crossplane core, the
// packages, function-auto-ready, the emulator) is pushed to the registry, so
// the cluster needs nothing else; the emulator is reached through `kubectl
// port-forward`, as the host has no route into the cluster. No Node objects
// are made (this-cluster's IPAllowlist follows the cluster's first Node).
// It refuses a cluster that already has Crossplane, and on Ctrl-C (or a
// failure) removes all it installed: the examples first, while the provider
// can still delete what they made in GCP, then the packages, Crossplane, the
// namespaces and the CRDs.
func runExternal(ctx context.Context, cfg config, out io.Writer) (err error) {
	start := time.Now()
	root, err := os.Getwd()
	if err != nil {
		return err
	}
	tmp, err := node.MkdirTemp("external-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	logf := func(format string, args ...any) { fmt.Fprintf(out, format+"\n", args...) }
	fmt.Fprintln(out, "resolving the tools (built once into the tool cache)…")
	tools, err := node.ResolveTools(root, tmp)
	if err != nil {
		return err
	}
	ext := &stack.External{Kubeconfig: cfg.kubeconfig, KubectlBin: tools.Kubectl, HelmBin: tools.Helm, Dir: tmp,
		Reg: node.Registry{Push: cfg.pushRegistry, Pull: cfg.registry, PlainHTTP: cfg.plainHTTP}}
	if err := ext.CheckEmpty(ctx); err != nil {
		return err
	}
	o, err := installOptions(tools, root, cfg, logf)
	if err != nil {
		return err
	}
	o.Cluster, o.PushCrossplane = ext, true

	// Whatever happens from here, what was installed is removed; with a
	// context of its own, since ctx ends with the Ctrl-C that starts it.
	var applied []string
	defer func() {
		cleanup, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		fmt.Fprintln(out, "\nremoving what make run installed…")
		if derr := removeDemo(cleanup, ext, applied, logf); derr != nil {
			err = joinErr(err, derr)
		}
		if uerr := ext.Uninstall(cleanup, root, logf); uerr != nil {
			err = joinErr(err, uerr)
			return
		}
		fmt.Fprintln(out, "the cluster is as it was")
	}()
	in, err := stack.Install(ctx, o)
	if err != nil {
		return err
	}
	if cfg.demo {
		emulator, stopForward, err := ext.PortForward(ctx, emulatorHostAddr, stack.EmulatorNamespace, "cloudarmor-emulator", stack.EmulatorPort)
		if err != nil {
			if emulator, stopForward, err = ext.PortForward(ctx, "127.0.0.1:0", stack.EmulatorNamespace, "cloudarmor-emulator", stack.EmulatorPort); err != nil {
				return err
			}
			logf("%s is taken; the emulator is at %s", emulatorHostAddr, emulator)
		}
		defer stopForward()
		dataPlane, stopDataPlane, err := ext.PortForward(ctx, dataPlaneHostAddr, stack.EmulatorNamespace, "cloudarmor-emulator", stack.DataPlanePort)
		if err != nil {
			if dataPlane, stopDataPlane, err = ext.PortForward(ctx, "127.0.0.1:0", stack.EmulatorNamespace, "cloudarmor-emulator", stack.DataPlanePort); err != nil {
				return err
			}
			logf("%s is taken; the data plane is at %s", dataPlaneHostAddr, dataPlane)
		}
		defer stopDataPlane()
		hostname, err := ext.Kubectl(ctx, "get", "nodes", "-o", `jsonpath={.items[0].metadata.labels.kubernetes\.io/hostname}`)
		if err != nil {
			return err
		}
		var d *demo
		d, applied, err = startDemo(ctx, demoTarget{cluster: ext, kubeconfig: cfg.kubeconfig, emulator: emulator, dataPlane: dataPlane, nodeName: hostname}, in, root, cfg, logf)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "\neverything Ready %s after `make run` started\n", time.Since(start).Round(100*time.Millisecond))
		if pods, err := ext.Kubectl(ctx, "get", "pods", "-n", "crossplane-system", "-o", "wide"); err == nil {
			fmt.Fprintf(out, "\n$ kubectl get pods -n crossplane-system\n%s\n", pods)
		}
		d.printTable(ctx, out)
		fmt.Fprintf(out, `
Try next (in another terminal):
  export KUBECONFIG=%s
  kubectl get providers                                # one: %s, Installed and Healthy
  kubectl get ipallowlists,addresssets,securitypolicies,securitypolicyrules -A
  kubectl edit securitypolicyrule api-edge-office      # change srcIpRanges or action
  curl -s http://%s/_emulator/stats | head -c 600      # what GCP (the emulator pod) holds and was asked
  # A request through backend service web-frontend (policy office-allowlist) on the emulator's data plane: 403, not an office.
  curl -si -H 'Host: web-frontend.demo-project.backend.local' -H 'X-Emulator-Client-IP: 198.51.100.77' http://%s/
Press Ctrl-C to remove everything make run installed.
`, cfg.kubeconfig, rbac.ProviderName, emulator, dataPlane)
	} else {
		fmt.Fprintf(out, "\ninstalled %s after `make run` started; Ctrl-C removes it\n", time.Since(start).Round(100*time.Millisecond))
	}
	<-ctx.Done()
	return nil
}

// removeDemo deletes what startDemo applied and waits until the provider has
// deleted every managed resource (and with them their GCP objects) and
// Crossplane every IPAllowlist.
//
// The objects go by kind before the files that made them: the files also
// hold the credentials Secret and ProviderConfigs every deletion connects
// with, and examples/allowlist/rbac.yaml's grant the provider deletes its
// AttachmentRecords with. Deleted together, a SecurityPolicy still attached
// to a backend outlives its credentials and keeps its finalizer forever.
func removeDemo(ctx context.Context, ext *stack.External, applied []string, logf func(string, ...any)) error {
	if len(applied) == 0 {
		return nil
	}
	// The IPAllowlists first, until their SecurityPolicyAllowlists are gone
	// (those delete the policies, rules and AddressSets they keep), then
	// every other managed resource.
	managed := demoKinds[:len(demoKinds)-2]
	for _, kinds := range [][]string{managed[:2], managed[2:]} {
		for _, kind := range kinds {
			if _, err := ext.Kubectl(ctx, "delete", "--ignore-not-found", "--wait=false", "--all", "-A", kind); err != nil &&
				!strings.Contains(err.Error(), "the server doesn't have a resource type") {
				return err
			}
		}
		if err := ext.WaitGone(ctx, 5*time.Minute, kinds...); err != nil {
			return fmt.Errorf("the examples are not all deleted: %w", err)
		}
	}
	// One file or folder at a time: kubectl stops at a kind the cluster does
	// not have (an apply that failed part way), and the rest must still go.
	for _, p := range applied {
		if _, err := ext.Kubectl(ctx, "delete", "--ignore-not-found", "--wait=false", "-f", p); err != nil &&
			!strings.Contains(err.Error(), "ensure CRDs are installed first") {
			return err
		}
	}
	if err := ext.WaitGone(ctx, 5*time.Minute, demoKinds...); err != nil {
		return fmt.Errorf("the ProviderConfigs are not all deleted: %w", err)
	}
	logf("removed the examples and what they made in GCP")
	return nil
}

func joinErr(a, b error) error {
	if a == nil {
		return b
	}
	return fmt.Errorf("%w; %w", a, b)
}
