package controlplane

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
)

// FieldManager owns the fields Apply writes, so re-applying edited manifests
// updates them instead of conflicting.
const FieldManager = "provider-cloudarmor-local"

// InstallCRDs installs the CRDs found in paths (folders or files, each must exist)
// and waits until they are established. It is for CRDs that appear after Start,
// e.g. when `make run` regenerates them.
func (cp *ControlPlane) InstallCRDs(paths ...string) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	crds, err := envtest.InstallCRDs(cp.Config, envtest.CRDInstallOptions{
		Paths:              paths,
		ErrorIfPathMissing: true,
		Scheme:             cp.opts.Scheme,
	})
	if err != nil {
		return nil, fmt.Errorf("cannot install CRDs from %s: %w", strings.Join(paths, ", "), err)
	}
	return crds, nil
}

// Apply server-side applies every object in the YAML files at paths (a folder means
// its *.yaml and *.yml files, in name order) and returns them as applied. Objects
// are applied in file order, so a file listing a namespace before its contents
// works. Objects of kinds unknown to the server fail with the server's message.
func (cp *ControlPlane) Apply(ctx context.Context, paths ...string) ([]*unstructured.Unstructured, error) {
	files, err := yamlFiles(paths)
	if err != nil {
		return nil, err
	}
	var applied []*unstructured.Unstructured
	for _, f := range files {
		objs, err := readObjects(f)
		if err != nil {
			return applied, err
		}
		for _, o := range objs {
			if err := cp.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(o),
				client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
				return applied, fmt.Errorf("%s: apply %s %s: %w", f, o.GetKind(), objectName(o), err)
			}
			applied = append(applied, o)
		}
	}
	return applied, nil
}

// yamlFiles expands folders in paths into their YAML files.
func yamlFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		entries, err := os.ReadDir(p)
		if err != nil {
			return nil, err
		}
		var names []string
		for _, e := range entries {
			if ext := filepath.Ext(e.Name()); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
				names = append(names, filepath.Join(p, e.Name()))
			}
		}
		sort.Strings(names)
		files = append(files, names...)
	}
	return files, nil
}

// readObjects decodes each non-empty document of a multi-document YAML file.
func readObjects(path string) ([]*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs, nil
			}
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		if len(m) == 0 {
			continue // an empty document, e.g. after a trailing "---"
		}
		objs = append(objs, &unstructured.Unstructured{Object: m})
	}
}

func objectName(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return ns + "/" + o.GetName()
	}
	return o.GetName()
}
