package function

// Sources read from the IPAllowlist's own namespace: LoadBalancer Services, one field of any
// namespaced object, and a key of a ConfigMap. The function validates them and composes each as
// a source of the SecurityPolicyAllowlist; the provider reads the objects through an AddressSet,
// with watches in the IPAllowlist's namespace only, as it reads Nodes. An edit of one of them
// therefore changes no object the function composes and never goes through Crossplane's loop.

import (
	"fmt"
	"regexp"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/crossplane/crossplane-runtime/v2/pkg/fieldpath"
)

// ServiceSource selects Services of type LoadBalancer in the IPAllowlist's namespace by label
// and allows their load balancer IPs (status.loadBalancer.ingress[].ip).
type ServiceSource struct {
	Name        string            `json:"name"`
	MatchLabels map[string]string `json:"matchLabels"`
	// Required holds the rules when no selected Service has an IP, as for a node source.
	Required bool `json:"required,omitempty"`
}

// ObjectSource allows the IPs or CIDRs at one field of objects of any namespaced kind in the
// IPAllowlist's namespace, selected by name or by label: a provider-gcp Address's
// status.atProvider.address, a NAT gateway's published IPs.
type ObjectSource struct {
	Name        string            `json:"name"`
	APIVersion  string            `json:"apiVersion"`
	Kind        string            `json:"kind"`
	ObjectName  string            `json:"objectName,omitempty"`
	MatchLabels map[string]string `json:"matchLabels,omitempty"`
	// FieldPath is where the value is: a string or a list of strings. It may hold wildcards
	// ([*]) to read one field of each element of a list.
	FieldPath string `json:"fieldPath"`
	Required  bool   `json:"required,omitempty"`
}

// ConfigMapSource allows the IPs or CIDRs listed in one key of a ConfigMap in the IPAllowlist's
// namespace, separated by whitespace, commas or newlines; '#' starts a comment.
type ConfigMapSource struct {
	Name          string `json:"name"`
	ConfigMapName string `json:"configMapName"`
	Key           string `json:"key"`
	Required      bool   `json:"required,omitempty"`
}

// Kinds of source, as messages and requirement keys name them.
const (
	kindService   = "service"
	kindObject    = "object"
	kindConfigMap = "configMap"
)

// readSource is one service, object or ConfigMap source, whatever its kind.
type readSource struct {
	kind, name string
	required   bool
}

// readSources are the spec's service, object and ConfigMap sources, in that order.
func (s Spec) readSources() []readSource {
	out := make([]readSource, 0, len(s.ServiceSources)+len(s.ObjectSources)+len(s.ConfigMapSources))
	for _, src := range s.ServiceSources {
		out = append(out, readSource{kindService, src.Name, src.Required})
	}
	for _, src := range s.ObjectSources {
		out = append(out, readSource{kindObject, src.Name, src.Required})
	}
	for _, src := range s.ConfigMapSources {
		out = append(out, readSource{kindConfigMap, src.Name, src.Required})
	}
	return out
}

// validateReadSources reports the first service, object or ConfigMap source that cannot be
// read safely: selectors that are empty or not label selectors at all, names that are not
// object names, a field path that does not parse, and Secrets, whose values must never reach
// the IPAllowlist's events. The AddressSet's CRD refuses most of these too; a render without
// it does not, and the team sees the problem here, on the IPAllowlist, at once.
func (s Spec) validateReadSources() error {
	for _, src := range s.ServiceSources {
		if len(src.MatchLabels) == 0 {
			return fmt.Errorf("service source %q: matchLabels must name at least one label", src.Name)
		}
		if err := validateLabels(src.MatchLabels); err != nil {
			return fmt.Errorf("service source %q: %w", src.Name, err)
		}
	}
	for _, src := range s.ObjectSources {
		label := fmt.Sprintf("object source %q", src.Name)
		gv, err := schema.ParseGroupVersion(src.APIVersion)
		if err != nil || gv.Version == "" {
			return fmt.Errorf("%s: apiVersion %q is not group/version or version", label, src.APIVersion)
		}
		if !kindPattern.MatchString(src.Kind) {
			return fmt.Errorf("%s: kind %q is not a kind (such as Address)", label, src.Kind)
		}
		if gv.Group == "" && src.Kind == "Secret" {
			return fmt.Errorf("%s: Secrets cannot be read: their values would appear in the IPAllowlist's warnings", label)
		}
		if (src.ObjectName == "") == (len(src.MatchLabels) == 0) {
			return fmt.Errorf("%s: set exactly one of objectName and matchLabels", label)
		}
		if src.ObjectName != "" {
			if errs := validation.IsDNS1123Subdomain(src.ObjectName); len(errs) > 0 {
				return fmt.Errorf("%s: objectName %q: %s", label, src.ObjectName, strings.Join(errs, "; "))
			}
		}
		if err := validateLabels(src.MatchLabels); err != nil {
			return fmt.Errorf("%s: %w", label, err)
		}
		if src.FieldPath == "" {
			return fmt.Errorf("%s: fieldPath is required", label)
		}
		if _, err := fieldpath.Parse(src.FieldPath); err != nil {
			return fmt.Errorf("%s: fieldPath %q: %v", label, src.FieldPath, err)
		}
	}
	for _, src := range s.ConfigMapSources {
		label := fmt.Sprintf("configMap source %q", src.Name)
		if errs := validation.IsDNS1123Subdomain(src.ConfigMapName); len(errs) > 0 {
			return fmt.Errorf("%s: configMapName %q: %s", label, src.ConfigMapName, strings.Join(errs, "; "))
		}
		if errs := validation.IsConfigMapKey(src.Key); len(errs) > 0 {
			return fmt.Errorf("%s: key %q: %s", label, src.Key, strings.Join(errs, "; "))
		}
	}
	return nil
}

// kindPattern is what a kind looks like: Address, SecurityPolicy.
var kindPattern = regexp.MustCompile(`^[A-Z][A-Za-z0-9]{0,62}$`)

func validateLabels(l map[string]string) error {
	keys := make([]string, 0, len(l))
	for k := range l {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if errs := validation.IsQualifiedName(k); len(errs) > 0 {
			return fmt.Errorf("label key %q: %s", k, strings.Join(errs, "; "))
		}
		if errs := validation.IsValidLabelValue(l[k]); len(errs) > 0 {
			return fmt.Errorf("label %s=%q: %s", k, l[k], strings.Join(errs, "; "))
		}
	}
	return nil
}

// namespaceSources are the allowlist's sources of the service, object and ConfigMap sources,
// each read by the provider in the IPAllowlist's namespace.
func (s Spec) namespaceSources() []any {
	out := make([]any, 0, len(s.readSources()))
	add := func(name string, required bool, field string, v map[string]any) {
		src := map[string]any{"name": name, field: v}
		if required {
			src["required"] = true
		}
		out = append(out, src)
	}
	for _, src := range s.ServiceSources {
		add(src.Name, src.Required, "services", map[string]any{"matchLabels": stringMap(src.MatchLabels)})
	}
	for _, src := range s.ObjectSources {
		o := map[string]any{"apiVersion": src.APIVersion, "kind": src.Kind, "fieldPath": src.FieldPath}
		if src.ObjectName != "" {
			o["objectName"] = src.ObjectName
		} else {
			o["matchLabels"] = stringMap(src.MatchLabels)
		}
		add(src.Name, src.Required, "object", o)
	}
	for _, src := range s.ConfigMapSources {
		add(src.Name, src.Required, "configMap", map[string]any{"name": src.ConfigMapName, "key": src.Key})
	}
	return out
}

// inNamespace reports the sources that need a namespace when the IPAllowlist has none: they
// read objects of its namespace only, and an AddressSet without one would have none to read.
func (s Spec) inNamespace(namespace string) error {
	if len(s.readSources()) > 0 && namespace == "" {
		return fmt.Errorf("serviceSources, objectSources and configMapSources need a namespaced IPAllowlist: they read objects of its namespace only")
	}
	return nil
}
