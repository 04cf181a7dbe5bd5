package integration

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

// TestIPAllowlistAdmission serves the IPAllowlist XRD's schema as the CRD
// Crossplane makes of it, and asserts what the API server admits of
// spec.attachTo: its CEL rules run nowhere else before a live install
// (crossplane render does not evaluate them).
func TestIPAllowlistAdmission(t *testing.T) {
	e := startControlPlane(t)
	ctx := context.Background()
	if err := e.kube.Create(ctx, xrdAsCRD(t)); err != nil {
		t.Fatal(err)
	}
	cases := map[string]struct {
		reason  string
		policy  string
		attach  string
		wantErr string // "" means accepted
	}{
		"BackendServices": {
			reason: "Backend services of a created policy are accepted.",
			policy: "{name: web, create: true}", attach: "[{backendService: web}, {backendService: api}]",
		},
		"BackendBucket": {
			reason: "A backend bucket of an existing global policy is accepted.",
			policy: "{name: edge}", attach: "[{backendBucket: static}]",
		},
		"Both": {
			reason: "An entry names one backend.",
			policy: "{name: web}", attach: "[{backendService: web, backendBucket: web}]",
			wantErr: "spec.attachTo[0]: Invalid value: set exactly one of backendService and backendBucket",
		},
		"Neither": {
			reason: "An empty entry is refused.",
			policy: "{name: web}", attach: "[{}]",
			wantErr: "set exactly one of backendService and backendBucket",
		},
		"Twice": {
			reason: "A backend named twice would be two attachments of one field.",
			policy: "{name: web}", attach: "[{backendService: web}, {backendService: web}]",
			wantErr: "spec.attachTo: Invalid value: attachTo names a backend twice",
		},
		"BucketOfCreatedPolicy": {
			reason: "A created policy is CLOUD_ARMOR, which a backend bucket does not take.",
			policy: "{name: web, create: true}", attach: "[{backendBucket: static}]",
			wantErr: "a backend bucket takes only a global CLOUD_ARMOR_EDGE policy",
		},
		"BucketOfRegionalPolicy": {
			reason: "Backend buckets are global.",
			policy: "{name: web, region: us-central1}", attach: "[{backendBucket: static}]",
			wantErr: "a backend bucket takes only a global CLOUD_ARMOR_EDGE policy",
		},
		"BadName": {
			reason: "A name GCP would refuse is refused at once.",
			policy: "{name: web}", attach: "[{backendService: Web_1}]",
			wantErr: "spec.attachTo[0].backendService in body should match",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			manifest := fmt.Sprintf("apiVersion: platform.armorplane.io/v1alpha1\nkind: IPAllowlist\nmetadata: {name: %s, namespace: default}\n"+
				"spec:\n  policy: %s\n  priorityRange: {first: 1000, last: 1009}\n  attachTo: %s\n", strings.ToLower(name), tc.policy, tc.attach)
			wantAdmission(ctx, t, e.kube, manifest, tc.wantErr, tc.reason)
		})
	}
}

// wantAdmission creates the object of manifest and checks that the API
// server admits it (wantErr "") or refuses it with an error containing
// wantErr.
func wantAdmission(ctx context.Context, t *testing.T, kube client.Client, manifest, wantErr, reason string) {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(manifest), &u.Object); err != nil {
		t.Fatal(err)
	}
	err := createWhenServed(ctx, kube, u)
	got := ""
	if err != nil {
		got = err.Error()
	}
	if (wantErr == "") != (got == "") || !strings.Contains(got, wantErr) {
		t.Errorf("%s\ncreate: got error %q, want one containing %q", reason, got, wantErr)
	}
}

// xrdAsCRD is the CRD of package/configuration/definition.yaml's one version,
// as Crossplane serves the XR (its schema; Crossplane's own fields aside).
func xrdAsCRD(t *testing.T) *unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile(repo.Path("package", "configuration", "definition.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	xrd := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(b, &xrd.Object); err != nil {
		t.Fatal(err)
	}
	versions, _, _ := unstructured.NestedSlice(xrd.Object, "spec", "versions")
	v := versions[0].(map[string]any)
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": xrd.GetName()},
		"spec": map[string]any{
			"group": "platform.armorplane.io", "scope": "Namespaced",
			"names": map[string]any{"kind": "IPAllowlist", "listKind": "IPAllowlistList", "plural": "ipallowlists", "singular": "ipallowlist"},
			"versions": []any{map[string]any{"name": v["name"], "served": true, "storage": true, "schema": v["schema"],
				"subresources": map[string]any{"status": map[string]any{}}}},
		},
	}}
	return crd
}

// createWhenServed creates u, retrying while its CRD is not served yet.
func createWhenServed(ctx context.Context, c client.Client, u *unstructured.Unstructured) error {
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Create(ctx, u)
		if err == nil || time.Now().After(deadline) || !strings.Contains(err.Error(), "no matches for kind") {
			return err
		}
		time.Sleep(200 * time.Millisecond)
	}
}
