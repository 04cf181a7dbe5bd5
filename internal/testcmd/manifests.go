package testcmd

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// manifests are the objects of the manifest files this command reads.
type manifests struct {
	policies []placed[*v1beta1.SecurityPolicy]
	rules    []placed[*v1beta1.SecurityPolicyRule]
	groups   []placed[*v1alpha1.AddressGroup]
}

// placed is an object and the file:document it came from.
type placed[T any] struct {
	obj   T
	where string
}

// manifestFiles expands paths: a directory stands for its .yaml and .yml
// files, recursively, in lexical order.
func manifestFiles(paths []string) ([]string, error) {
	var files []string
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			files = append(files, p)
			continue
		}
		var found []string
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if ext := filepath.Ext(path); !d.IsDir() && (ext == ".yaml" || ext == ".yml") {
				found = append(found, path)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		sort.Strings(found)
		files = append(files, found...)
	}
	return files, nil
}

// readManifests reads every document of files. Documents of other kinds are
// skipped; one of ours that does not decode is an error naming the file and
// document.
func readManifests(files []string) (manifests, error) {
	var m manifests
	for _, f := range files {
		b, err := os.ReadFile(f) //nolint:gosec // reading the files the user named is the point
		if err != nil {
			return m, fmt.Errorf("cannot read manifest file: %w", err)
		}
		if err := m.parse(f, b); err != nil {
			return m, err
		}
	}
	return m, nil
}

func (m *manifests) parse(file string, b []byte) error {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	for i := 1; ; i++ {
		raw, err := r.Read()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s:%d: cannot split YAML documents: %w", file, i, err)
		}
		if err := m.decode(fmt.Sprintf("%s:%d", file, i), raw); err != nil {
			return err
		}
	}
}

func (m *manifests) decode(where string, raw []byte) error {
	var head struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return nil
	}
	if err := yaml.Unmarshal(raw, &head); err != nil {
		return fmt.Errorf("%s: not a Kubernetes manifest: %w", where, err)
	}
	g, v, _ := strings.Cut(head.APIVersion, "/")
	if g != v1beta1.Group {
		return nil
	}
	strict := func(into any) error {
		if err := yaml.UnmarshalStrict(raw, into); err != nil {
			return fmt.Errorf("%s: %s/%s: cannot decode: %s", where, head.Kind, head.Name, jsonMessage(err))
		}
		return nil
	}
	switch {
	case v == v1beta1.Version && head.Kind == v1beta1.SecurityPolicyKind:
		o := &v1beta1.SecurityPolicy{}
		if err := strict(o); err != nil {
			return err
		}
		defaultNamespace(o)
		m.policies = append(m.policies, placed[*v1beta1.SecurityPolicy]{o, where})
	case v == v1beta1.Version && head.Kind == v1beta1.SecurityPolicyRuleKind:
		o := &v1beta1.SecurityPolicyRule{}
		if err := strict(o); err != nil {
			return err
		}
		defaultNamespace(o)
		m.rules = append(m.rules, placed[*v1beta1.SecurityPolicyRule]{o, where})
	case v == v1alpha1.Version && head.Kind == v1alpha1.AddressGroupKind:
		o := &v1alpha1.AddressGroup{}
		if err := strict(o); err != nil {
			return err
		}
		defaultNamespace(o)
		m.groups = append(m.groups, placed[*v1alpha1.AddressGroup]{o, where})
	}
	return nil
}

// defaultNamespace puts an object without a namespace in "default", where
// kubectl would create it.
func defaultNamespace(o metav1.Object) {
	if o.GetNamespace() == "" {
		o.SetNamespace("default")
	}
}

// externalName is the GCP name the provider gives an object: its
// external-name annotation, or else its name.
func externalName(o metav1.Object) string {
	if n := meta.GetExternalName(o); n != "" {
		return n
	}
	return o.GetName()
}

// jsonMessage is a decoding error without the layers of prefixes the YAML
// and JSON decoders give it: json: unknown field "rulez".
func jsonMessage(err error) string {
	msg := err.Error()
	for _, p := range []string{"error unmarshaling JSON: ", "while decoding JSON: "} {
		msg = strings.TrimPrefix(msg, p)
	}
	return msg
}
