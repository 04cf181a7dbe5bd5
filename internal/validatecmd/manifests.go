package validatecmd

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"strings"

	"github.com/crossplane/crossplane-runtime/v2/pkg/errors"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
)

// A document is one YAML document of a file: where it is, and what it holds
// when it is a kind this package validates.
type document struct {
	file  string
	index int // 1-based, in the file
	kind  string
	name  string // metadata.name
	// Exactly one of these is set for a kind this package validates.
	policy *v1beta1.SecurityPolicy
	rule   *v1beta1.SecurityPolicyRule
}

// where is the FILE:DOC: Kind/name prefix of the document's findings.
func (d document) where() string {
	s := d.file + ":" + itoa(d.index) + ":"
	if d.kind != "" {
		s += " " + d.kind + "/" + d.name + ":"
	}
	return s
}

// readFiles reads every document of every file, in order. A file that cannot
// be read, or a document that is not YAML or does not decode into its kind,
// is an error naming the file and document: the input is wrong, not the
// policy.
func readFiles(files []string) ([]document, error) {
	var docs []document
	for _, f := range files {
		b, err := os.ReadFile(f) //nolint:gosec // reading the files the user named is the point
		if err != nil {
			return nil, errors.Wrap(err, "cannot read manifest file")
		}
		ds, err := parse(f, b)
		if err != nil {
			return nil, err
		}
		docs = append(docs, ds...)
	}
	return docs, nil
}

// parse splits a file into documents; empty ones (comments only) are left
// out but counted, so that DOC is the document's place in the file.
func parse(file string, b []byte) ([]document, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs []document
	for i := 1; ; i++ {
		raw, err := r.Read()
		if err == io.EOF {
			return docs, nil
		}
		if err != nil {
			return nil, errors.Wrapf(err, "%s:%d: cannot split YAML documents", file, i)
		}
		d, err := decode(raw)
		if err != nil {
			return nil, errors.Wrapf(err, "%s:%d", file, i)
		}
		if d == nil {
			continue
		}
		d.file, d.index = file, i
		docs = append(docs, *d)
	}
}

// decode reads one document; nil for an empty one.
func decode(raw []byte) (*document, error) {
	if len(bytes.TrimSpace(stripComments(raw))) == 0 {
		return nil, nil
	}
	var head struct {
		metav1.TypeMeta   `json:",inline"`
		metav1.ObjectMeta `json:"metadata"`
	}
	if err := yaml.Unmarshal(raw, &head); err != nil {
		return nil, errors.Wrap(err, "not a Kubernetes manifest")
	}
	d := &document{kind: head.Kind, name: head.Name}
	if group(head.APIVersion) != v1beta1.Group {
		return d, nil
	}
	switch head.Kind {
	case v1beta1.SecurityPolicyKind:
		d.policy = &v1beta1.SecurityPolicy{}
		if err := yaml.UnmarshalStrict(raw, d.policy); err != nil {
			return nil, errors.Wrapf(err, "%s/%s: cannot decode", head.Kind, head.Name)
		}
	case v1beta1.SecurityPolicyRuleKind:
		d.rule = &v1beta1.SecurityPolicyRule{}
		if err := yaml.UnmarshalStrict(raw, d.rule); err != nil {
			return nil, errors.Wrapf(err, "%s/%s: cannot decode", head.Kind, head.Name)
		}
	}
	return d, nil
}

// externalName is the GCP name the provider gives an object: its
// external-name annotation, or else its name.
func externalName(o metav1.Object) string {
	if n := meta.GetExternalName(o); n != "" {
		return n
	}
	return o.GetName()
}

func group(apiVersion string) string {
	g, _, _ := strings.Cut(apiVersion, "/")
	return g
}

func stripComments(b []byte) []byte {
	var out []byte
	for line := range bytes.Lines(b) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
		}
	}
	return out
}
