package stack

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/armorplane/provider-cloudarmor/cluster/node"
	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
)

func TestOnNode(t *testing.T) {
	type want struct {
		step Step
		err  bool
	}
	cases := map[string]struct {
		reason string
		cmd    string
		want   want
	}{
		"RepoAdd": {
			reason: "The node has no network: the chart comes from the Crossplane module, so adding its repository runs nothing.",
			cmd:    "helm repo add crossplane-stable https://charts.crossplane.io/stable",
			want:   want{step: Step{Why: "no chart repository: the chart is in the Crossplane module"}},
		},
		"HelmInstall": {
			reason: "The chart is the module's, at the version README names; the image comes from the registry the cluster pulls from.",
			cmd:    "helm install crossplane crossplane-stable/crossplane --version 2.4.0 --namespace crossplane-system --create-namespace --wait",
			want: want{step: Step{Tool: "helm", Why: "chart from the module, image from the node's registry", Args: []string{
				"install", "crossplane", "chart", "--namespace", "crossplane-system", "--create-namespace", "--wait",
				"--set", "image.repository=registry.test:5000/crossplane", "--set", "image.tag=" + node.CrossplaneVersion, "--timeout", "5m"}}},
		},
		"HelmOtherVersion": {
			reason: "A README naming another Crossplane version than the node runs is an error, not a silent substitution.",
			cmd:    "helm install crossplane crossplane-stable/crossplane --version 2.3.0",
			want:   want{err: true},
		},
		"RuntimeConfig": {
			reason: "The README's provider-runtime.yaml is cluster/rbac's file.",
			cmd:    "kubectl apply -f provider-runtime.yaml",
			want:   want{step: Step{Tool: "kubectl", Args: []string{"apply", "-f", filepath.Join("/repo", "cluster/rbac/provider-runtime.yaml")}}},
		},
		"XpkgInstall": {
			reason: "crossplane xpkg install runs unchanged: an ImageConfig points its registry at the node's.",
			cmd:    "crossplane xpkg install configuration xpkg.crossplane.io/a/b:v1 --wait=5m",
			want:   want{step: Step{Tool: "crossplane", Args: []string{"xpkg", "install", "configuration", "xpkg.crossplane.io/a/b:v1", "--wait=5m"}}},
		},
		"Unknown": {
			reason: "A command with no translation is an error, so a README change cannot go untested.",
			cmd:    "kubectl create namespace x",
			want:   want{err: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := OnNode(tc.cmd, "chart", "/repo", "registry.test:5000")
			if (err != nil) != tc.want.err {
				t.Fatalf("\n%s\nOnNode(...): error %v, want error %t", tc.reason, err, tc.want.err)
			}
			if diff := cmp.Diff(tc.want.step, got); diff != "" {
				t.Errorf("\n%s\nOnNode(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestInstalledProvider(t *testing.T) {
	cases := map[string]struct {
		reason string
		cmds   []string
		want   string
		err    bool
	}{
		"README": {
			reason: "The README installs the provider under the name Crossplane's resolver derives.",
			cmds:   ReadmeInstall,
			want:   rbac.ProviderName,
		},
		"EarlierREADME": {
			reason: "An earlier README named it provider-cloudarmor.",
			cmds: []string{"kubectl apply -f provider-runtime.yaml",
				"crossplane xpkg install provider xpkg.crossplane.io/armorplane/provider-cloudarmor:v0.1.0 provider-cloudarmor --runtime-config=provider-cloudarmor --wait=5m"},
			want: "provider-cloudarmor",
		},
		"Unnamed": {
			reason: "Without a name the CLI derives one; Install must know which Provider to wait for, so it is an error.",
			cmds:   []string{"crossplane xpkg install provider xpkg.crossplane.io/armorplane/provider-cloudarmor:v0.1.0 --wait=5m"},
			err:    true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := InstalledProvider(tc.cmds)
			if (err != nil) != tc.err {
				t.Fatalf("\n%s\nInstalledProvider(...): error %v, want error %t", tc.reason, err, tc.err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("\n%s\nInstalledProvider(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestOfPackage(t *testing.T) {
	got := ofPackage([]string{
		"armorplane-provider-cloudarmor=xpkg.crossplane.io/armorplane/provider-cloudarmor:v0.1.0",
		"provider-cloudarmor=xpkg.crossplane.io/armorplane/provider-cloudarmor:v0.2.0",
		"upbound-provider-gcp=xpkg.upbound.io/upbound/provider-gcp:v1",
		"lookalike=xpkg.crossplane.io/armorplane/provider-cloudarmor-extra:v1",
	}, "armorplane/provider-cloudarmor")
	if diff := cmp.Diff([]string{"armorplane-provider-cloudarmor", "provider-cloudarmor"}, got); diff != "" {
		t.Errorf("ofPackage: the Providers of our package, whatever their names and versions, and no other (-want +got):\n%s", diff)
	}
}

func TestProviderArgsPatch(t *testing.T) {
	var got map[string]any
	if err := json.Unmarshal([]byte(providerArgsPatch([]string{"--poll=10s", "--debug"})), &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"spec": map[string]any{"deploymentTemplate": map[string]any{"spec": map[string]any{
		"selector": map[string]any{},
		"template": map[string]any{"spec": map[string]any{"containers": []any{
			map[string]any{"name": "package-runtime", "args": []any{"--poll=10s", "--debug"}},
		}}},
	}}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("providerArgsPatch: -want, +got:\n%s", diff)
	}
}
