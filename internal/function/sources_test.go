package function

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
)

var (
	natServices = ServiceSource{Name: "nat-lb", MatchLabels: map[string]string{"app": "nat"}}
	natAddress  = ObjectSource{Name: "nat-ip", APIVersion: "compute.gcp.m.upbound.io/v1beta1", Kind: "Address", ObjectName: "nat-ip", FieldPath: "status.atProvider.address"}
	natAddrs    = ObjectSource{Name: "nat-ips", APIVersion: "compute.gcp.m.upbound.io/v1beta1", Kind: "Address", MatchLabels: map[string]string{"egress": "nat"}, FieldPath: "status.atProvider.address"}
	egressList  = ConfigMapSource{Name: "egress", ConfigMapName: "egress", Key: "cidrs"}
)

func TestValidateReadSources(t *testing.T) {
	ok := Spec{Policy: Policy{Name: "web"}, PriorityRange: PriorityRange{First: 1000, Last: 1009}}
	object := func(fn func(*ObjectSource)) func(Spec) Spec {
		return func(s Spec) Spec {
			o := natAddress
			fn(&o)
			s.ObjectSources = []ObjectSource{o}
			return s
		}
	}
	cases := map[string]struct {
		spec    func(Spec) Spec
		wantErr string
	}{
		"Valid": {spec: func(s Spec) Spec {
			s.ServiceSources = []ServiceSource{natServices}
			s.ObjectSources = []ObjectSource{natAddress, natAddrs}
			s.ConfigMapSources = []ConfigMapSource{egressList}
			return s
		}},
		"NameUsedAcrossLists": {
			spec: func(s Spec) Spec {
				s.NodeSources = []NodeSource{{Name: "egress"}}
				s.ConfigMapSources = []ConfigMapSource{egressList}
				return s
			},
			wantErr: `source name "egress" is used twice: source names must be unique across staticSources, nodeSources, instanceSources, natSources, serviceSources, objectSources and configMapSources`,
		},
		"NameUsedByServiceAndObject": {
			spec: func(s Spec) Spec {
				s.ServiceSources = []ServiceSource{{Name: "nat-ip", MatchLabels: map[string]string{"app": "nat"}}}
				s.ObjectSources = []ObjectSource{natAddress}
				return s
			},
			wantErr: `source name "nat-ip" is used twice: source names must be unique across staticSources, nodeSources, instanceSources, natSources, serviceSources, objectSources and configMapSources`,
		},
		"ServiceWithoutLabels": {
			spec:    func(s Spec) Spec { s.ServiceSources = []ServiceSource{{Name: "lb"}}; return s },
			wantErr: `service source "lb": matchLabels must name at least one label`,
		},
		"ServiceBadLabelValue": {
			spec: func(s Spec) Spec {
				s.ServiceSources = []ServiceSource{{Name: "lb", MatchLabels: map[string]string{"app": "a b"}}}
				return s
			},
			wantErr: `service source "lb": label app="a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		},
		"ObjectNameAndLabels": {
			spec:    object(func(o *ObjectSource) { o.MatchLabels = map[string]string{"egress": "nat"} }),
			wantErr: `object source "nat-ip": set exactly one of objectName and matchLabels`,
		},
		"ObjectNeither": {
			spec:    object(func(o *ObjectSource) { o.ObjectName = "" }),
			wantErr: `object source "nat-ip": set exactly one of objectName and matchLabels`,
		},
		"ObjectSecret": {
			spec: object(func(o *ObjectSource) {
				o.APIVersion, o.Kind, o.FieldPath = "v1", "Secret", "data.password"
			}),
			wantErr: `object source "nat-ip": Secrets cannot be read: their values would appear in the IPAllowlist's warnings`,
		},
		"ObjectBadAPIVersion": {
			spec:    object(func(o *ObjectSource) { o.APIVersion = "a/b/c" }),
			wantErr: `object source "nat-ip": apiVersion "a/b/c" is not group/version or version`,
		},
		"ObjectBadKind": {
			spec:    object(func(o *ObjectSource) { o.Kind = "address" }),
			wantErr: `object source "nat-ip": kind "address" is not a kind (such as Address)`,
		},
		"ObjectBadName": {
			spec:    object(func(o *ObjectSource) { o.ObjectName = "NAT_IP" }),
			wantErr: `object source "nat-ip": objectName "NAT_IP": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		},
		"ObjectBadFieldPath": {
			spec:    object(func(o *ObjectSource) { o.FieldPath = "status.addresses[0" }),
			wantErr: `object source "nat-ip": fieldPath "status.addresses[0": unterminated '[' at position 16`,
		},
		"ConfigMapBadKey": {
			spec: func(s Spec) Spec {
				s.ConfigMapSources = []ConfigMapSource{{Name: "egress", ConfigMapName: "egress", Key: "a/b"}}
				return s
			},
			wantErr: `configMap source "egress": key "a/b": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.wantErr, errString(tc.spec(ok).Validate())); diff != "" {
				t.Errorf("Validate(): -want error, +got error:\n%s", diff)
			}
		})
	}
}

// TestRunFunctionNamespaceSources runs the function over service, object and ConfigMap sources:
// it composes each as a source the provider reads, asks Crossplane to fetch nothing, and shows
// what the allowlist reports of them.
func TestRunFunctionNamespaceSources(t *testing.T) {
	xr := func(namespace string) map[string]any {
		return map[string]any{
			"apiVersion": "platform.armorplane.io/v1alpha1", "kind": "IPAllowlist",
			"metadata": map[string]any{"name": "web", "namespace": namespace},
			"spec": map[string]any{
				"policy":         map[string]any{"name": "web-allowlist"},
				"priorityRange":  map[string]any{"first": 1000, "last": 1001},
				"serviceSources": []any{map[string]any{"name": "nat-lb", "matchLabels": map[string]any{"app": "nat"}, "required": true}},
				"objectSources": []any{
					map[string]any{"name": "nat-ip", "apiVersion": "compute.gcp.m.upbound.io/v1beta1", "kind": "Address", "objectName": "nat-ip", "fieldPath": "status.atProvider.address"},
					map[string]any{"name": "nat-ips", "apiVersion": "compute.gcp.m.upbound.io/v1beta1", "kind": "Address", "matchLabels": map[string]any{"egress": "nat"}, "fieldPath": "status.atProvider.address"},
				},
				"configMapSources": []any{map[string]any{"name": "egress", "configMapName": "egress", "key": "cidrs"}},
			},
		}
	}
	allowlist := func() map[string]any {
		return map[string]any{
			"apiVersion": "cloudarmor.armorplane.io/v1alpha1", "kind": "SecurityPolicyAllowlist",
			"metadata": map[string]any{"name": "web"},
			"spec": map[string]any{
				"securityPolicy": "web-allowlist", "ruleDescription": "IPAllowlist team-a/web", "mode": "rules",
				"priorityRange": map[string]any{"first": float64(1000), "last": float64(1001)},
				"sources": []any{
					map[string]any{"name": "nat-lb", "required": true, "services": map[string]any{"matchLabels": map[string]any{"app": "nat"}}},
					map[string]any{"name": "nat-ip", "object": map[string]any{"apiVersion": "compute.gcp.m.upbound.io/v1beta1", "kind": "Address", "objectName": "nat-ip", "fieldPath": "status.atProvider.address"}},
					map[string]any{"name": "nat-ips", "object": map[string]any{"apiVersion": "compute.gcp.m.upbound.io/v1beta1", "kind": "Address", "matchLabels": map[string]any{"egress": "nat"}, "fieldPath": "status.atProvider.address"}},
					map[string]any{"name": "egress", "configMap": map[string]any{"name": "egress", "key": "cidrs"}},
				},
			},
		}
	}
	// reported is the allowlist once it reported on its spec, with what the provider read.
	reported := func() map[string]any {
		al := allowlist()
		al["metadata"].(map[string]any)["generation"] = float64(2)
		al["status"] = map[string]any{
			"observedGeneration": float64(2), "ipCount": float64(3), "rangesInGCP": float64(3), "ruleCount": float64(1),
			"unmatchedSources": []any{"nat-ips"},
			"warnings":         []any{`object source "nat-ips": no address: 0 Address object(s) match labels {egress=nat}`},
			"conditions": []any{
				map[string]any{"type": "Current", "status": "True", "reason": "Composed", "message": "in the rules"},
				map[string]any{"type": "Ready", "status": "True", "reason": "Available"},
			},
		}
		return al
	}
	type condition struct{ Status, Reason, Message string }
	cases := map[string]struct {
		reason       string
		xr           map[string]any
		observed     map[string]any
		wantDesired  map[string]map[string]any
		wantWarnings []string
		wantFatal    string
		wantCurrent  condition
	}{
		"Composed": {
			reason:      "Each source is composed for the provider to read; the IPAllowlist waits for the allowlist's report.",
			xr:          xr("team-a"),
			wantDesired: map[string]map[string]any{"allowlist": allowlist()},
			wantCurrent: condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
		},
		"ReportShown": {
			reason:       "What the provider read is shown as the allowlist reports it: its warnings as events, unmatched sources in status.",
			xr:           xr("team-a"),
			observed:     reported(),
			wantDesired:  map[string]map[string]any{"allowlist": allowlist()},
			wantWarnings: []string{`object source "nat-ips": no address: 0 Address object(s) match labels {egress=nat}`},
			wantCurrent:  condition{"True", ReasonComposed, "in the rules"},
		},
		"NoNamespace": {
			reason:      "Without a namespace there is nothing these sources may read: the spec is refused and nothing is composed.",
			xr:          xr(""),
			wantFatal:   "serviceSources, objectSources and configMapSources need a namespaced IPAllowlist: they read objects of its namespace only",
			wantCurrent: condition{"False", ReasonInvalidSpec, "serviceSources, objectSources and configMapSources need a namespaced IPAllowlist: they read objects of its namespace only"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			observed := map[string]*fnv1.Resource{}
			if tc.observed != nil {
				observed["allowlist"] = &fnv1.Resource{Resource: mustStruct(t, tc.observed)}
			}
			req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, tc.xr)}, Resources: observed}}
			rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if rsp.GetRequirements() != nil {
				t.Errorf("%s\nthe function asked Crossplane to fetch %v: the provider reads these sources", tc.reason, rsp.GetRequirements())
			}
			var warnings []string
			fatal := ""
			for _, r := range rsp.GetResults() {
				switch r.GetSeverity() {
				case fnv1.Severity_SEVERITY_WARNING:
					warnings = append(warnings, r.GetMessage())
				case fnv1.Severity_SEVERITY_FATAL:
					fatal = r.GetMessage()
				default:
					t.Errorf("%s\nunexpected result %v", tc.reason, r)
				}
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings); diff != "" {
				t.Errorf("%s\nwarnings: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantFatal, fatal); diff != "" {
				t.Errorf("%s\nfatal result: -want, +got:\n%s", tc.reason, diff)
			}
			var current []condition
			for _, c := range rsp.GetConditions() {
				st := map[fnv1.Status]string{fnv1.Status_STATUS_CONDITION_TRUE: "True", fnv1.Status_STATUS_CONDITION_FALSE: "False"}[c.GetStatus()]
				current = append(current, condition{st, c.GetReason(), c.GetMessage()})
			}
			if diff := cmp.Diff([]condition{tc.wantCurrent}, current); diff != "" {
				t.Errorf("%s\nCurrent condition: -want, +got:\n%s", tc.reason, diff)
			}
			got := map[string]map[string]any{}
			for n, r := range rsp.GetDesired().GetResources() {
				got[n] = r.GetResource().AsMap()
			}
			if diff := cmp.Diff(tc.wantDesired, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ndesired composed resources: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
