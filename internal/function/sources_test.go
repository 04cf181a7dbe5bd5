package function

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/protobuf/testing/protocmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/crossplane/function-sdk-go/logging"
	fnv1 "github.com/crossplane/function-sdk-go/proto/v1"
	"github.com/crossplane/function-sdk-go/resource"

	"github.com/armorplane/provider-cloudarmor/internal/iprange"
)

const ns = "team-a"

// service is a Service of type typ in namespace, labelled app=nat, whose load balancer reports
// ingress.
func service(namespace, name, typ string, ingress ...map[string]any) map[string]any {
	in := make([]any, 0, len(ingress))
	for _, i := range ingress {
		in = append(in, i)
	}
	return map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{"app": "nat"}},
		"spec":     map[string]any{"type": typ},
		"status":   map[string]any{"loadBalancer": map[string]any{"ingress": in}},
	}
}

// address is a provider-gcp Address whose status.atProvider.address is addr (absent when nil).
func address(namespace, name string, addr any) map[string]any {
	status := map[string]any{}
	if addr != nil {
		status["atProvider"] = map[string]any{"address": addr}
	}
	return map[string]any{
		"apiVersion": "compute.gcp.m.upbound.io/v1beta1", "kind": "Address",
		"metadata": map[string]any{"name": name, "namespace": namespace, "labels": map[string]any{"egress": "nat"}},
		"status":   status,
	}
}

func configMap(namespace, name string, data map[string]any) map[string]any {
	return map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": namespace},
		"data":     data,
	}
}

func asRequired(in map[string][]map[string]any) map[string][]resource.Required {
	out := map[string][]resource.Required{}
	for k, objs := range in {
		out[k] = []resource.Required{}
		for _, o := range objs {
			out[k] = append(out[k], resource.Required{Resource: &unstructured.Unstructured{Object: o}})
		}
	}
	return out
}

var (
	natServices = ServiceSource{Name: "nat-lb", MatchLabels: map[string]string{"app": "nat"}}
	natAddress  = ObjectSource{Name: "nat-ip", APIVersion: "compute.gcp.m.upbound.io/v1beta1", Kind: "Address", ObjectName: "nat-ip", FieldPath: "status.atProvider.address"}
	natAddrs    = ObjectSource{Name: "nat-ips", APIVersion: "compute.gcp.m.upbound.io/v1beta1", Kind: "Address", MatchLabels: map[string]string{"egress": "nat"}, FieldPath: "status.atProvider.address"}
	egressList  = ConfigMapSource{Name: "egress", ConfigMapName: "egress", Key: "cidrs"}
)

func TestRequirements(t *testing.T) {
	team := ns
	cases := map[string]struct {
		reason    string
		spec      Spec
		namespace string
		want      map[string]*fnv1.ResourceSelector
		wantErr   string
	}{
		"NoneToRead": {
			reason:    "Static and node sources need no required resource.",
			spec:      Spec{StaticSources: []StaticSource{{Name: "office", CIDRs: []string{"203.0.113.0/24"}}}, NodeSources: []NodeSource{{Name: "pool"}}},
			namespace: ns,
			want:      map[string]*fnv1.ResourceSelector{},
		},
		"EverySelectorInTheXRNamespace": {
			reason:    "Each source is one selector, always in the IPAllowlist's namespace: Services and objects by label, objects and ConfigMaps by name.",
			spec:      Spec{ServiceSources: []ServiceSource{natServices}, ObjectSources: []ObjectSource{natAddress, natAddrs}, ConfigMapSources: []ConfigMapSource{egressList}},
			namespace: ns,
			want: map[string]*fnv1.ResourceSelector{
				"serviceSources/nat-lb": {ApiVersion: "v1", Kind: "Service", Namespace: &team,
					Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{"app": "nat"}}}},
				"objectSources/nat-ip": {ApiVersion: "compute.gcp.m.upbound.io/v1beta1", Kind: "Address", Namespace: &team,
					Match: &fnv1.ResourceSelector_MatchName{MatchName: "nat-ip"}},
				"objectSources/nat-ips": {ApiVersion: "compute.gcp.m.upbound.io/v1beta1", Kind: "Address", Namespace: &team,
					Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{"egress": "nat"}}}},
				"configMapSources/egress": {ApiVersion: "v1", Kind: "ConfigMap", Namespace: &team,
					Match: &fnv1.ResourceSelector_MatchName{MatchName: "egress"}},
			},
		},
		"NoNamespaceRefused": {
			reason:  "Without a namespace a label selector would match across every namespace: refused.",
			spec:    Spec{ServiceSources: []ServiceSource{natServices}},
			wantErr: "serviceSources, objectSources and configMapSources need a namespaced IPAllowlist: they read objects of its namespace only",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := Requirements(tc.spec, tc.namespace)
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Fatalf("%s\nRequirements(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got, protocmp.Transform(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nRequirements(...): -want, +got:\n%s", tc.reason, diff)
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

func TestParseList(t *testing.T) {
	cases := map[string]struct {
		in   string
		want []Token
	}{
		"Empty":          {in: "", want: nil},
		"OnlyComments":   {in: "# NAT egress\n  # none yet\n", want: nil},
		"Newlines":       {in: "203.0.113.7\n198.51.100.0/28\n", want: []Token{{"203.0.113.7", 1}, {"198.51.100.0/28", 2}}},
		"CommasAndSpace": {in: "203.0.113.7, 203.0.113.8,203.0.113.9\t2001:db8::1", want: []Token{{"203.0.113.7", 1}, {"203.0.113.8", 1}, {"203.0.113.9", 1}, {"2001:db8::1", 1}}},
		"Comments":       {in: "203.0.113.7 # gateway a\n# 203.0.113.8\n203.0.113.9#b", want: []Token{{"203.0.113.7", 1}, {"203.0.113.9", 3}}},
		"CRLF":           {in: "203.0.113.7\r\n203.0.113.8\r\n", want: []Token{{"203.0.113.7", 1}, {"203.0.113.8", 2}}},
		"EmptyEntries":   {in: ",,203.0.113.7,,\n\n,", want: []Token{{"203.0.113.7", 1}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ParseList(tc.in)); diff != "" {
				t.Errorf("ParseList(%q): -want, +got:\n%s", tc.in, diff)
			}
		})
	}
}

// TestReadAndCollect reads sources from the resources Crossplane fetched and collects them with
// the other sources, as RunFunction does.
func TestReadAndCollect(t *testing.T) {
	cases := map[string]struct {
		reason    string
		spec      Spec
		required  map[string][]map[string]any
		want      []string
		unmatched []string
		warnings  []string
		pending   []string
		wantErr   string
	}{
		"LoadBalancerIPs": {
			reason: "The IPs of the selected LoadBalancer Services are allowed; a ClusterIP Service is ignored; a host name cannot be allowed and is named in a warning.",
			spec:   Spec{ServiceSources: []ServiceSource{natServices}},
			required: map[string][]map[string]any{"serviceSources/nat-lb": {
				service(ns, "nat-a", "LoadBalancer", map[string]any{"ip": "203.0.113.7"}, map[string]any{"ip": "2001:db8::7"}),
				service(ns, "nat-b", "LoadBalancer", map[string]any{"hostname": "nat-b.example.com"}),
				service(ns, "internal", "ClusterIP", map[string]any{"ip": "10.0.0.1"}),
			}},
			want:     []string{"203.0.113.7/32", "2001:db8::7/128"},
			warnings: []string{`service source "nat-lb": Service team-a/nat-b: ingress host name "nat-b.example.com" left out: Cloud Armor matches IP addresses, not names`},
		},
		"LoadBalancerIPNormalised": {
			reason:   "An IPv4-mapped IPv6 ingress IP becomes the IPv4 /32.",
			spec:     Spec{ServiceSources: []ServiceSource{natServices}},
			required: map[string][]map[string]any{"serviceSources/nat-lb": {service(ns, "nat-a", "LoadBalancer", map[string]any{"ip": "::ffff:203.0.113.7"})}},
			want:     []string{"203.0.113.7/32"},
		},
		"ServiceWithoutAddressYet": {
			reason:    "A LoadBalancer Service still waiting for its IP is named; an optional source with nothing else is unmatched.",
			spec:      Spec{ServiceSources: []ServiceSource{natServices}},
			required:  map[string][]map[string]any{"serviceSources/nat-lb": {service(ns, "nat-a", "LoadBalancer")}},
			unmatched: []string{"nat-lb"},
			warnings: []string{
				`service source "nat-lb": Service team-a/nat-a has no load balancer address yet`,
				`service source "nat-lb": no address: 1 Service(s) match labels {app=nat} in namespace team-a, 1 of type LoadBalancer`,
			},
		},
		"ServiceSelectorMatchesNothingOptional": {
			reason:    "An optional selector matching nothing is unmatched, with a warning, like a node source.",
			spec:      Spec{StaticSources: []StaticSource{{Name: "office", CIDRs: []string{"198.51.100.0/24"}}}, ServiceSources: []ServiceSource{natServices}},
			required:  map[string][]map[string]any{"serviceSources/nat-lb": {}},
			want:      []string{"198.51.100.0/24"},
			unmatched: []string{"nat-lb"},
			warnings:  []string{`service source "nat-lb": no address: 0 Service(s) match labels {app=nat} in namespace team-a, 0 of type LoadBalancer`},
		},
		"ServiceSelectorMatchesNothingRequired": {
			reason:   "A required selector matching nothing holds the rules, like a node source.",
			spec:     Spec{ServiceSources: []ServiceSource{{Name: "nat-lb", MatchLabels: map[string]string{"app": "nat"}, Required: true}}},
			required: map[string][]map[string]any{"serviceSources/nat-lb": {service(ns, "internal", "ClusterIP")}},
			wantErr:  `service source "nat-lb": no address: 1 Service(s) match labels {app=nat} in namespace team-a, 0 of type LoadBalancer, and the source is required; the rules are left as they are`,
		},
		"OtherNamespaceLeftOut": {
			reason:    "A Service of another namespace never counts, even if one reached the function.",
			spec:      Spec{ServiceSources: []ServiceSource{natServices}},
			required:  map[string][]map[string]any{"serviceSources/nat-lb": {service("team-b", "nat-a", "LoadBalancer", map[string]any{"ip": "203.0.113.7"})}},
			unmatched: []string{"nat-lb"},
			warnings: []string{
				`service source "nat-lb": Service team-b/nat-a left out: not in namespace team-a, the IPAllowlist's`,
				`service source "nat-lb": no address: 0 Service(s) match labels {app=nat} in namespace team-a, 0 of type LoadBalancer`,
			},
		},
		"ObjectByName": {
			reason:   "The field of the named object is allowed.",
			spec:     Spec{ObjectSources: []ObjectSource{natAddress}},
			required: map[string][]map[string]any{"objectSources/nat-ip": {address(ns, "nat-ip", "34.1.2.3")}},
			want:     []string{"34.1.2.3/32"},
		},
		"ObjectByNameMissingHolds": {
			reason:   "A named object that does not exist holds the rules, required or not: a name is explicit.",
			spec:     Spec{ObjectSources: []ObjectSource{natAddress}},
			required: map[string][]map[string]any{"objectSources/nat-ip": {}},
			wantErr:  `object source "nat-ip": Address team-a/nat-ip not found; the rules are left as they are`,
		},
		"ObjectByNameWithoutValueOptional": {
			reason:    "A named object without the field yet (an Address being created) contributes nothing; optional, it is unmatched.",
			spec:      Spec{ObjectSources: []ObjectSource{natAddress}},
			required:  map[string][]map[string]any{"objectSources/nat-ip": {address(ns, "nat-ip", nil)}},
			unmatched: []string{"nat-ip"},
			warnings:  []string{`object source "nat-ip": no address: Address team-a/nat-ip has no address at status.atProvider.address`},
		},
		"ObjectByNameWithoutValueRequired": {
			reason: "Required, the same holds the rules.",
			spec: Spec{ObjectSources: []ObjectSource{func() ObjectSource {
				s := natAddress
				s.Required = true
				return s
			}()}},
			required: map[string][]map[string]any{"objectSources/nat-ip": {address(ns, "nat-ip", nil)}},
			wantErr:  `object source "nat-ip": no address: Address team-a/nat-ip has no address at status.atProvider.address, and the source is required; the rules are left as they are`,
		},
		"ObjectsByLabelListsAndStrings": {
			reason: "A field may hold a list of strings (a /30 there covers the other object's address); objects without the field are named; values that are not strings are left out.",
			spec:   Spec{ObjectSources: []ObjectSource{natAddrs}},
			required: map[string][]map[string]any{"objectSources/nat-ips": {
				address(ns, "a", "34.1.2.3"),
				address(ns, "b", []any{"34.1.2.4", "34.1.2.0/30", float64(7)}),
				address(ns, "c", nil),
				address(ns, "d", map[string]any{"ip": "34.1.2.5"}),
			}},
			want: []string{"34.1.2.0/30", "34.1.2.4/32"},
			warnings: []string{
				`object source "nat-ips": Address team-a/b status.atProvider.address[2] left out: a number, not a string`,
				`object source "nat-ips": Address team-a/c has no value at status.atProvider.address yet`,
				`object source "nat-ips": Address team-a/d status.atProvider.address left out: an object, want a string or a list of strings`,
			},
		},
		"ObjectWildcard": {
			reason: "A wildcard reads one field of each element of a list, as in a Gateway's status.addresses[*].value.",
			spec: Spec{ObjectSources: []ObjectSource{{Name: "gw", APIVersion: "gateway.networking.k8s.io/v1", Kind: "Gateway", ObjectName: "egress",
				FieldPath: "status.addresses[*].value"}}},
			required: map[string][]map[string]any{"objectSources/gw": {{
				"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
				"metadata": map[string]any{"name": "egress", "namespace": ns},
				"status": map[string]any{"addresses": []any{
					map[string]any{"type": "IPAddress", "value": "203.0.113.10"},
					map[string]any{"type": "IPAddress", "value": "203.0.113.11"},
				}},
			}}},
			want: []string{"203.0.113.10/32", "203.0.113.11/32"},
		},
		"ObjectMalformedValueNotQuoted": {
			reason:   "A malformed value of an arbitrary object is left out, the others kept; the warning names the object and field but does not show the value.",
			spec:     Spec{ObjectSources: []ObjectSource{natAddrs}},
			required: map[string][]map[string]any{"objectSources/nat-ips": {address(ns, "a", "34.1.2.3"), address(ns, "b", "s3cr3t-value")}},
			want:     []string{"34.1.2.3/32"},
			warnings: []string{`object source "nat-ips": Address team-a/b status.atProvider.address left out: a value of 12 character(s) that is not an IP address or a CIDR without host bits (not shown)`},
		},
		"ConfigMapList": {
			reason:   "The CIDRs of a ConfigMap key are allowed; comments and separators are ignored; a malformed entry is left out with a warning naming it, the others kept.",
			spec:     Spec{ConfigMapSources: []ConfigMapSource{egressList}},
			required: map[string][]map[string]any{"configMapSources/egress": {configMap(ns, "egress", map[string]any{"cidrs": "# NAT egress\n198.51.100.0/28, 203.0.113.7\n198.51.100.300 # typo\n2001:db8:1::/48\n"})}},
			want:     []string{"198.51.100.0/28", "203.0.113.7/32", "2001:db8:1::/48"},
			warnings: []string{`configMap source "egress": ConfigMap team-a/egress key cidrs line 3 left out: "198.51.100.300" is neither a CIDR nor an IP address`},
		},
		"ConfigMapHostBits": {
			reason:   "A CIDR with host bits set is left out with the hint, not widened.",
			spec:     Spec{ConfigMapSources: []ConfigMapSource{egressList}},
			required: map[string][]map[string]any{"configMapSources/egress": {configMap(ns, "egress", map[string]any{"cidrs": "198.51.100.7/24\n203.0.113.7"})}},
			want:     []string{"203.0.113.7/32"},
			warnings: []string{`configMap source "egress": ConfigMap team-a/egress key cidrs line 1 left out: "198.51.100.7/24" has host bits set: did you mean 198.51.100.0/24?`},
		},
		"ConfigMapManyMalformedCapped": {
			reason: "Malformed values are named up to five, then counted: a broken list does not flood the events.",
			spec:   Spec{ConfigMapSources: []ConfigMapSource{egressList}},
			required: map[string][]map[string]any{"configMapSources/egress": {configMap(ns, "egress", map[string]any{
				"cidrs": "a b c d e f g 203.0.113.7"})}},
			want: []string{"203.0.113.7/32"},
			warnings: []string{
				`configMap source "egress": ConfigMap team-a/egress key cidrs line 1 left out: "a" is neither a CIDR nor an IP address`,
				`configMap source "egress": ConfigMap team-a/egress key cidrs line 1 left out: "b" is neither a CIDR nor an IP address`,
				`configMap source "egress": ConfigMap team-a/egress key cidrs line 1 left out: "c" is neither a CIDR nor an IP address`,
				`configMap source "egress": ConfigMap team-a/egress key cidrs line 1 left out: "d" is neither a CIDR nor an IP address`,
				`configMap source "egress": ConfigMap team-a/egress key cidrs line 1 left out: "e" is neither a CIDR nor an IP address`,
				`configMap source "egress": 2 more malformed value(s) left out`,
			},
		},
		"ConfigMapEmptyRequired": {
			reason:   "A key that lists nothing, for a required source, holds the rules.",
			spec:     Spec{ConfigMapSources: []ConfigMapSource{{Name: "egress", ConfigMapName: "egress", Key: "cidrs", Required: true}}},
			required: map[string][]map[string]any{"configMapSources/egress": {configMap(ns, "egress", map[string]any{"cidrs": "# none yet\n"})}},
			wantErr:  `configMap source "egress": no address: ConfigMap team-a/egress key "cidrs" lists no address, and the source is required; the rules are left as they are`,
		},
		"ConfigMapMissingHolds": {
			reason:   "A ConfigMap that does not exist holds the rules and is named.",
			spec:     Spec{ConfigMapSources: []ConfigMapSource{egressList}},
			required: map[string][]map[string]any{"configMapSources/egress": {}},
			wantErr:  `configMap source "egress": ConfigMap team-a/egress not found; the rules are left as they are`,
		},
		"ConfigMapKeyMissingHolds": {
			reason:   "A key that does not exist is as explicit as the ConfigMap's name: it holds the rules.",
			spec:     Spec{ConfigMapSources: []ConfigMapSource{egressList}},
			required: map[string][]map[string]any{"configMapSources/egress": {configMap(ns, "egress", map[string]any{"other": "203.0.113.7"})}},
			wantErr:  `configMap source "egress": ConfigMap team-a/egress has no key "cidrs"; the rules are left as they are`,
		},
		"ConfigMapBinaryDataHolds": {
			reason: "A key in binaryData is refused by name.",
			spec:   Spec{ConfigMapSources: []ConfigMapSource{egressList}},
			required: map[string][]map[string]any{"configMapSources/egress": {{
				"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "egress", "namespace": ns},
				"binaryData": map[string]any{"cidrs": "MjAzLjAuMTEzLjc="},
			}}},
			wantErr: `configMap source "egress": ConfigMap team-a/egress holds key "cidrs" in binaryData, not data: list the addresses as text; the rules are left as they are`,
		},
		"NotFetchedYetPending": {
			reason:  "A source whose requirement Crossplane has not answered yet is pending.",
			spec:    Spec{ServiceSources: []ServiceSource{natServices}, ConfigMapSources: []ConfigMapSource{egressList}},
			pending: []string{`"nat-lb"`, `"egress"`},
		},
		"AllSourcesMerged": {
			reason: "Ranges of every kind of source are merged by one path: duplicates once, ranges inside others (a Node in the ConfigMap's /28, a Service IP in the office's /24) dropped, sorted.",
			spec: Spec{
				StaticSources:    []StaticSource{{Name: "office", CIDRs: []string{"203.0.113.0/24"}}},
				NodeSources:      []NodeSource{{Name: "pool"}},
				ServiceSources:   []ServiceSource{natServices},
				ObjectSources:    []ObjectSource{natAddress},
				ConfigMapSources: []ConfigMapSource{egressList},
			},
			required: map[string][]map[string]any{
				"serviceSources/nat-lb":   {service(ns, "nat-a", "LoadBalancer", map[string]any{"ip": "203.0.113.7"}, map[string]any{"ip": "34.1.2.3"})},
				"objectSources/nat-ip":    {address(ns, "nat-ip", "34.1.2.3")},
				"configMapSources/egress": {configMap(ns, "egress", map[string]any{"cidrs": "34.1.2.3\n198.51.100.0/28"})},
			},
			want: []string{"34.1.2.3/32", "198.51.100.0/28", "203.0.113.0/24"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			required := asRequired(tc.required)
			read, pending, err := ReadSources(tc.spec, ns, required)
			if diff := cmp.Diff(tc.pending, pending); diff != "" {
				t.Errorf("%s\nReadSources(...) pending: -want, +got:\n%s", tc.reason, diff)
			}
			if len(tc.pending) > 0 {
				return
			}
			var names []string
			var cidrs map[string][]string
			var unmatched, warnings []string
			if err == nil {
				names, cidrs, unmatched, warnings, err = readRanges(tc.spec, read)
			}
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Fatalf("%s\nReadSources and readRanges: -want error, +got error:\n%s", tc.reason, diff)
			}
			if err != nil {
				return
			}
			// What the allowlist will allow: the static sources and each read source's CIDRs.
			var got []netip.Prefix
			for _, src := range tc.spec.StaticSources {
				got = append(got, mustPrefixes(t, src.CIDRs...)...)
			}
			for _, n := range names {
				got = append(got, mustPrefixes(t, cidrs[n]...)...)
			}
			if diff := cmp.Diff(mustPrefixes(t, tc.want...), iprange.Minimal(got), cmpPrefix, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nranges: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.unmatched, unmatched); diff != "" {
				t.Errorf("%s\nreadRanges(...) unmatched: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.warnings, warnings); diff != "" {
				t.Errorf("%s\nreadRanges(...) warnings: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

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

// TestRunFunctionReadSources runs the function over the sources it reads itself: what it asks
// Crossplane for, and how the rules follow, or are held.
func TestRunFunctionReadSources(t *testing.T) {
	team := ns
	xr := func(mutate func(spec map[string]any)) map[string]any {
		spec := map[string]any{
			"policy":           map[string]any{"name": "web-allowlist"},
			"priorityRange":    map[string]any{"first": 1000, "last": 1001},
			"serviceSources":   []any{map[string]any{"name": "nat-lb", "matchLabels": map[string]any{"app": "nat"}}},
			"objectSources":    []any{map[string]any{"name": "nat-ip", "apiVersion": "compute.gcp.m.upbound.io/v1beta1", "kind": "Address", "objectName": "nat-ip", "fieldPath": "status.atProvider.address"}},
			"configMapSources": []any{map[string]any{"name": "egress", "configMapName": "egress", "key": "cidrs"}},
		}
		if mutate != nil {
			mutate(spec)
		}
		return map[string]any{
			"apiVersion": "platform.armorplane.io/v1alpha1", "kind": "IPAllowlist",
			"metadata": map[string]any{"name": "web", "namespace": ns},
			"spec":     spec,
		}
	}
	// allowlist is the SecurityPolicyAllowlist composed for xr(nil) with the CIDRs of each read
	// source that yields any.
	allowlist := func(read ...map[string]any) map[string]any {
		sources := []any{}
		for _, r := range read {
			sources = append(sources, r)
		}
		return map[string]any{
			"apiVersion": "cloudarmor.armorplane.io/v1alpha1", "kind": "SecurityPolicyAllowlist",
			"metadata": map[string]any{"name": "web"},
			"spec": map[string]any{
				"securityPolicy": "web-allowlist", "ruleDescription": "IPAllowlist team-a/web", "mode": "rules",
				"priorityRange": map[string]any{"first": float64(1000), "last": float64(1001)},
				"sources":       sources,
			},
		}
	}
	src := func(name string, cidrs ...any) map[string]any { return map[string]any{"name": name, "cidrs": cidrs} }
	all := map[string][]map[string]any{
		"serviceSources/nat-lb":   {service(ns, "nat-a", "LoadBalancer", map[string]any{"ip": "203.0.113.7"})},
		"objectSources/nat-ip":    {address(ns, "nat-ip", "34.1.2.3")},
		"configMapSources/egress": {configMap(ns, "egress", map[string]any{"cidrs": "198.51.100.0/28"})},
	}
	without := func(key string) map[string][]map[string]any {
		out := map[string][]map[string]any{}
		for k, v := range all {
			if k != key {
				out[k] = v
			}
		}
		return out
	}
	with := func(key string, objs ...map[string]any) map[string][]map[string]any {
		out := without(key)
		out[key] = objs
		return out
	}
	live := map[string]map[string]any{"allowlist": allowlist(src("nat-lb", "203.0.113.7/32"), src("nat-ip", "34.1.2.3/32"))}
	// reportedLive is live as its allowlist reports it once GCP holds its spec.
	reportedLive := func() map[string]map[string]any {
		al := allowlist(src("nat-lb", "203.0.113.7/32"), src("nat-ip", "34.1.2.3/32"), src("egress", "198.51.100.0/28"))
		al["metadata"].(map[string]any)["generation"] = float64(3)
		al["status"] = map[string]any{
			"observedGeneration": float64(3), "ipCount": float64(3), "ruleCount": float64(1),
			"conditions": []any{
				map[string]any{"type": "Current", "status": "True", "reason": "Composed", "message": "in the rules"},
				map[string]any{"type": "Ready", "status": "True", "reason": "Available"},
			},
		}
		return map[string]map[string]any{"allowlist": al}
	}
	type condition struct{ Status, Reason, Message string }

	cases := map[string]struct {
		reason       string
		xr           map[string]any
		observed     map[string]map[string]any
		required     map[string][]map[string]any
		wantDesired  map[string]map[string]any
		wantNotReady []string
		wantWarnings []string
		wantCurrent  condition
	}{
		"FirstCallAsksAndWaits": {
			reason:       "Before Crossplane has fetched anything the function asks for every source and holds the rules.",
			xr:           xr(nil),
			observed:     live,
			wantDesired:  live,
			wantNotReady: []string{"allowlist"},
			wantCurrent:  condition{"False", ReasonSourcesPending, `waiting for Crossplane to fetch the objects of source(s) "nat-lb", "nat-ip", "egress"`},
		},
		"Composed": {
			reason:      "With every source fetched, each one's CIDRs go to the allowlist as a source of its own.",
			xr:          xr(nil),
			observed:    live,
			required:    all,
			wantDesired: map[string]map[string]any{"allowlist": allowlist(src("nat-lb", "203.0.113.7/32"), src("nat-ip", "34.1.2.3/32"), src("egress", "198.51.100.0/28"))},
			wantCurrent: condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
		},
		"ServiceIPChanged": {
			reason:      "A Service whose IP changed changes its source's CIDRs.",
			xr:          xr(nil),
			observed:    live,
			required:    with("serviceSources/nat-lb", service(ns, "nat-a", "LoadBalancer", map[string]any{"ip": "203.0.113.99"})),
			wantDesired: map[string]map[string]any{"allowlist": allowlist(src("nat-lb", "203.0.113.99/32"), src("nat-ip", "34.1.2.3/32"), src("egress", "198.51.100.0/28"))},
			wantCurrent: condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
		},
		"ServiceIPChangedKeepsReport": {
			reason: "A read source's new ranges are data, not a new spec: the IPAllowlist keeps showing what the allowlist reported " +
				"(as for a Node's address) rather than flipping to SourcesPending and back on every edit.",
			xr:          xr(nil),
			observed:    reportedLive(),
			required:    with("serviceSources/nat-lb", service(ns, "nat-a", "LoadBalancer", map[string]any{"ip": "203.0.113.99"})),
			wantDesired: map[string]map[string]any{"allowlist": allowlist(src("nat-lb", "203.0.113.99/32"), src("nat-ip", "34.1.2.3/32"), src("egress", "198.51.100.0/28"))},
			wantCurrent: condition{"True", ReasonComposed, "in the rules"},
		},
		"SpecChangedWaitsForReport": {
			reason: "A change of the IPAllowlist's own spec is a new spec: SourcesPending until the allowlist reports on it.",
			xr: xr(func(spec map[string]any) {
				spec["priorityRange"] = map[string]any{"first": 1000, "last": 1002}
			}),
			observed: reportedLive(),
			required: all,
			wantDesired: map[string]map[string]any{"allowlist": func() map[string]any {
				al := allowlist(src("nat-lb", "203.0.113.7/32"), src("nat-ip", "34.1.2.3/32"), src("egress", "198.51.100.0/28"))
				al["spec"].(map[string]any)["priorityRange"] = map[string]any{"first": float64(1000), "last": float64(1002)}
				return al
			}()},
			wantCurrent: condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
		},
		"OneSourceStillFetching": {
			reason:       "A source Crossplane has not fetched yet holds the rules, even when the others are there.",
			xr:           xr(nil),
			observed:     live,
			required:     without("configMapSources/egress"),
			wantDesired:  live,
			wantNotReady: []string{"allowlist"},
			wantCurrent:  condition{"False", ReasonSourcesPending, `waiting for Crossplane to fetch the objects of source(s) "egress"`},
		},
		"NamedObjectMissingHolds": {
			reason:       "A named object that does not exist holds the allowlist exactly as observed, with a warning naming it.",
			xr:           xr(nil),
			observed:     live,
			required:     with("objectSources/nat-ip"),
			wantDesired:  live,
			wantNotReady: []string{"allowlist"},
			wantWarnings: []string{`object source "nat-ip": Address team-a/nat-ip not found; the rules are left as they are`},
			wantCurrent:  condition{"False", ReasonCannotCompose, `object source "nat-ip": Address team-a/nat-ip not found; the rules are left as they are`},
		},
		"RequiredServiceEmptyHolds": {
			reason: "A required Service selector matching nothing holds the rules.",
			xr: xr(func(spec map[string]any) {
				spec["serviceSources"] = []any{map[string]any{"name": "nat-lb", "matchLabels": map[string]any{"app": "nat"}, "required": true}}
			}),
			observed:     live,
			required:     with("serviceSources/nat-lb"),
			wantDesired:  live,
			wantNotReady: []string{"allowlist"},
			wantWarnings: []string{`service source "nat-lb": no address: 0 Service(s) match labels {app=nat} in namespace team-a, 0 of type LoadBalancer, and the source is required; the rules are left as they are`},
			wantCurrent:  condition{"False", ReasonCannotCompose, `service source "nat-lb": no address: 0 Service(s) match labels {app=nat} in namespace team-a, 0 of type LoadBalancer, and the source is required; the rules are left as they are`},
		},
		"MalformedValueLeftOut": {
			reason:       "A malformed ConfigMap entry is left out with a warning; the allowlist follows the rest.",
			xr:           xr(nil),
			observed:     live,
			required:     with("configMapSources/egress", configMap(ns, "egress", map[string]any{"cidrs": "198.51.100.0/28 198.51.100.999"})),
			wantDesired:  map[string]map[string]any{"allowlist": allowlist(src("nat-lb", "203.0.113.7/32"), src("nat-ip", "34.1.2.3/32"), src("egress", "198.51.100.0/28"))},
			wantWarnings: []string{`configMap source "egress": ConfigMap team-a/egress key cidrs line 1 left out: "198.51.100.999" is neither a CIDR nor an IP address`},
			wantCurrent:  condition{"False", ReasonSourcesPending, "waiting for the SecurityPolicyAllowlist to report on its spec"},
		},
	}
	wantSelectors := map[string]*fnv1.ResourceSelector{
		"serviceSources/nat-lb": {ApiVersion: "v1", Kind: "Service", Namespace: &team,
			Match: &fnv1.ResourceSelector_MatchLabels{MatchLabels: &fnv1.MatchLabels{Labels: map[string]string{"app": "nat"}}}},
		"objectSources/nat-ip": {ApiVersion: "compute.gcp.m.upbound.io/v1beta1", Kind: "Address", Namespace: &team,
			Match: &fnv1.ResourceSelector_MatchName{MatchName: "nat-ip"}},
		"configMapSources/egress": {ApiVersion: "v1", Kind: "ConfigMap", Namespace: &team,
			Match: &fnv1.ResourceSelector_MatchName{MatchName: "egress"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			observed := map[string]*fnv1.Resource{}
			for n, r := range tc.observed {
				observed[n] = &fnv1.Resource{Resource: mustStruct(t, r)}
			}
			req := &fnv1.RunFunctionRequest{Observed: &fnv1.State{Composite: &fnv1.Resource{Resource: mustStruct(t, tc.xr)}, Resources: observed}}
			if tc.required != nil {
				req.RequiredResources = map[string]*fnv1.Resources{}
				for k, objs := range tc.required {
					rs := &fnv1.Resources{}
					for _, o := range objs {
						rs.Items = append(rs.Items, &fnv1.Resource{Resource: mustStruct(t, o)})
					}
					req.RequiredResources[k] = rs
				}
			}
			rsp, err := New(logging.NewNopLogger()).RunFunction(context.Background(), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(wantSelectors, rsp.GetRequirements().GetResources(), protocmp.Transform()); diff != "" {
				t.Errorf("%s\nrequired resources asked for: -want, +got:\n%s", tc.reason, diff)
			}
			var warnings []string
			for _, r := range rsp.GetResults() {
				if r.GetSeverity() != fnv1.Severity_SEVERITY_WARNING {
					t.Errorf("%s\nunexpected result %v", tc.reason, r)
					continue
				}
				warnings = append(warnings, r.GetMessage())
			}
			if diff := cmp.Diff(tc.wantWarnings, warnings); diff != "" {
				t.Errorf("%s\nwarnings: -want, +got:\n%s", tc.reason, diff)
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
			var notReady []string
			for n, r := range rsp.GetDesired().GetResources() {
				got[n] = r.GetResource().AsMap()
				if r.GetReady() == fnv1.Ready_READY_FALSE {
					notReady = append(notReady, n)
				}
			}
			if diff := cmp.Diff(tc.wantDesired, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\ndesired composed resources: -want, +got:\n%s", tc.reason, diff)
			}
			slices.Sort(notReady)
			if diff := cmp.Diff(tc.wantNotReady, notReady); diff != "" {
				t.Errorf("%s\nresources marked not ready: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}
