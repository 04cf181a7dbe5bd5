package sourceread

import (
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const ns = "team-a"

// service is a Service of type typ whose load balancer reports ingress.
func service(name, typ string, ingress ...map[string]any) *unstructured.Unstructured {
	in := make([]any, 0, len(ingress))
	for _, i := range ingress {
		in = append(in, i)
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Service",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": "nat"}},
		"spec":     map[string]any{"type": typ},
		"status":   map[string]any{"loadBalancer": map[string]any{"ingress": in}},
	}}
}

// address is a provider-gcp Address whose status.atProvider.address is
// addr (absent when nil).
func address(name string, addr any) *unstructured.Unstructured {
	status := map[string]any{}
	if addr != nil {
		status["atProvider"] = map[string]any{"address": addr}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "compute.gcp.m.upbound.io/v1beta1", "kind": "Address",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"status":   status,
	}}
}

func configMap(data, binary map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "egress", "namespace": ns},
	}}
	if data != nil {
		u.Object["data"] = data
	}
	if binary != nil {
		u.Object["binaryData"] = binary
	}
	return u
}

func prefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}

var cmpPrefix = cmpopts.EquateComparable(netip.Prefix{})

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

func TestService(t *testing.T) {
	cases := map[string]struct {
		reason string
		svc    *unstructured.Unstructured
		want   Found
		wantLB bool
	}{
		"LoadBalancerIPs": {
			reason: "Every ingress IP of a LoadBalancer Service is read, and may be quoted.",
			svc:    service("nat-a", "LoadBalancer", map[string]any{"ip": "203.0.113.7"}, map[string]any{"ip": "2001:db8::7"}),
			want: Found{Values: []Value{
				{Text: "203.0.113.7", From: "Service team-a/nat-a status.loadBalancer.ingress[0].ip", Quote: true},
				{Text: "2001:db8::7", From: "Service team-a/nat-a status.loadBalancer.ingress[1].ip", Quote: true},
			}},
			wantLB: true,
		},
		"HostName": {
			reason: "A host name cannot be allowed: it is a note that says why.",
			svc:    service("nat-b", "LoadBalancer", map[string]any{"hostname": "nat-b.example.com"}),
			want:   Found{Notes: []string{`Service team-a/nat-b: ingress host name "nat-b.example.com" left out: Cloud Armor matches IP addresses, not names`}},
			wantLB: true,
		},
		"NoAddressYet": {
			reason: "A LoadBalancer Service still waiting for its IP is a note.",
			svc:    service("nat-c", "LoadBalancer"),
			want:   Found{Notes: []string{"Service team-a/nat-c has no load balancer address yet"}},
			wantLB: true,
		},
		"ClusterIPIgnored": {
			reason: "A Service of another type is not read and not counted.",
			svc:    service("internal", "ClusterIP", map[string]any{"ip": "10.0.0.1"}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, lb := Service(tc.svc)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nService(...): -want, +got:\n%s", tc.reason, diff)
			}
			if lb != tc.wantLB {
				t.Errorf("%s\nService(...): LoadBalancer %t, want %t", tc.reason, lb, tc.wantLB)
			}
		})
	}
}

func TestObject(t *testing.T) {
	gateway := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "gateway.networking.k8s.io/v1", "kind": "Gateway",
		"metadata": map[string]any{"name": "egress", "namespace": ns},
		"status": map[string]any{"addresses": []any{
			map[string]any{"type": "IPAddress", "value": "203.0.113.10"},
			map[string]any{"type": "IPAddress", "value": "203.0.113.11"},
		}},
	}}
	cases := map[string]struct {
		reason string
		obj    *unstructured.Unstructured
		kind   string
		path   string
		want   Found
	}{
		"String": {
			reason: "A string at the field is one value, never to be quoted.",
			obj:    address("nat-ip", "34.1.2.3"),
			kind:   "Address", path: "status.atProvider.address",
			want: Found{Values: []Value{{Text: "34.1.2.3", From: "Address team-a/nat-ip status.atProvider.address"}}},
		},
		"ListOfStrings": {
			reason: "A list's strings are values; an element that is not a string is a note naming its type, not its value.",
			obj:    address("b", []any{"34.1.2.4", "34.1.2.0/30", float64(7)}),
			kind:   "Address", path: "status.atProvider.address",
			want: Found{
				Values: []Value{
					{Text: "34.1.2.4", From: "Address team-a/b status.atProvider.address[0]"},
					{Text: "34.1.2.0/30", From: "Address team-a/b status.atProvider.address[1]"},
				},
				Notes: []string{"Address team-a/b status.atProvider.address[2] left out: a number, not a string"},
			},
		},
		"NoValueYet": {
			reason: "An object without the field (an Address being created) is a note.",
			obj:    address("c", nil),
			kind:   "Address", path: "status.atProvider.address",
			want: Found{Notes: []string{"Address team-a/c has no value at status.atProvider.address yet"}},
		},
		"NotAString": {
			reason: "An object at the field is a note naming its type.",
			obj:    address("d", map[string]any{"ip": "34.1.2.5"}),
			kind:   "Address", path: "status.atProvider.address",
			want: Found{Notes: []string{"Address team-a/d status.atProvider.address left out: an object, want a string or a list of strings"}},
		},
		"Wildcard": {
			reason: "A wildcard reads one field of each element of a list, as a Gateway's status.addresses[*].value.",
			obj:    gateway,
			kind:   "Gateway", path: "status.addresses[*].value",
			want: Found{Values: []Value{
				{Text: "203.0.113.10", From: "Gateway team-a/egress status.addresses[0].value"},
				{Text: "203.0.113.11", From: "Gateway team-a/egress status.addresses[1].value"},
			}},
		},
		"WildcardOverNothing": {
			reason: "A wildcard over a list the object does not have yet is no value, not an error.",
			obj:    address("e", nil),
			kind:   "Gateway", path: "status.addresses[*].value",
			want: Found{Notes: []string{"Gateway team-a/e has no value at status.addresses[*].value yet"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Object(tc.obj, tc.kind, tc.path)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nObject(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestConfigMap(t *testing.T) {
	cases := map[string]struct {
		reason  string
		cm      *unstructured.Unstructured
		want    Found
		wantErr string
	}{
		"List": {
			reason: "Each entry of the key is a value that may be quoted, named by its line.",
			cm:     configMap(map[string]any{"cidrs": "# NAT egress\n198.51.100.0/28, 203.0.113.7\n"}, nil),
			want: Found{Values: []Value{
				{Text: "198.51.100.0/28", From: "ConfigMap team-a/egress key cidrs line 2", Quote: true},
				{Text: "203.0.113.7", From: "ConfigMap team-a/egress key cidrs line 2", Quote: true},
			}},
		},
		"KeyMissing": {
			reason:  "A key that does not exist is an error: a key is as explicit as a name.",
			cm:      configMap(map[string]any{"other": "203.0.113.7"}, nil),
			wantErr: `ConfigMap team-a/egress has no key "cidrs"`,
		},
		"BinaryData": {
			reason:  "A key in binaryData is refused by name.",
			cm:      configMap(nil, map[string]any{"cidrs": "MjAzLjAuMTEzLjc="}),
			wantErr: `ConfigMap team-a/egress holds key "cidrs" in binaryData, not data: list the addresses as text`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ConfigMap(tc.cm, "cidrs")
			if diff := cmp.Diff(tc.wantErr, errString(err)); diff != "" {
				t.Errorf("%s\nConfigMap(...): -want error, +got error:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nConfigMap(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	listed := func(text string) Found {
		f, err := ConfigMap(configMap(map[string]any{"cidrs": text}, nil), "cidrs")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	var manyNotes []string
	for i := range MaxNotesNamed + 3 {
		manyNotes = append(manyNotes, fmt.Sprintf("Service team-a/lb-%02d has no load balancer address yet", i))
	}
	cases := map[string]struct {
		reason string
		found  []Found
		want   Result
	}{
		"DistinctSortedIPv4First": {
			reason: "Values of every object are parsed, kept once and sorted IPv4 first; a CIDR stays as wide as it is listed.",
			found: []Found{
				listed("2001:db8:1::/48\n198.51.100.0/28, 203.0.113.7"),
				{Values: []Value{{Text: "203.0.113.7"}, {Text: "::ffff:34.1.2.3"}}},
			},
			want: Result{Prefixes: prefixes("34.1.2.3/32", "198.51.100.0/28", "203.0.113.7/32", "2001:db8:1::/48")},
		},
		"HostBitsRefused": {
			reason: "A CIDR with host bits set is left out with the hint, not widened.",
			found:  []Found{listed("198.51.100.7/24\n203.0.113.7")},
			want: Result{
				Prefixes: prefixes("203.0.113.7/32"),
				Warnings: []string{`ConfigMap team-a/egress key cidrs line 1 left out: "198.51.100.7/24" has host bits set: did you mean 198.51.100.0/24?`},
			},
		},
		"MalformedOfObjectNotQuoted": {
			reason: "A malformed value of an arbitrary object is left out, the others kept; the warning names the object and field, and only the value's length.",
			found: []Found{
				Object(address("a", "34.1.2.3"), "Address", "status.atProvider.address"),
				Object(address("b", "s3cr3t-value"), "Address", "status.atProvider.address"),
			},
			want: Result{
				Prefixes: prefixes("34.1.2.3/32"),
				Warnings: []string{"Address team-a/b status.atProvider.address left out: a value of 12 character(s) that is not an IP address or a CIDR without host bits (not shown)"},
			},
		},
		"ManyMalformedCapped": {
			reason: "Malformed values are named up to five, then counted: a broken list does not flood the events.",
			found:  []Found{listed("a b c d e f g 203.0.113.7")},
			want: Result{
				Prefixes: prefixes("203.0.113.7/32"),
				Warnings: []string{
					"2 more malformed value(s) left out",
					`ConfigMap team-a/egress key cidrs line 1 left out: "a" is neither a CIDR nor an IP address`,
					`ConfigMap team-a/egress key cidrs line 1 left out: "b" is neither a CIDR nor an IP address`,
					`ConfigMap team-a/egress key cidrs line 1 left out: "c" is neither a CIDR nor an IP address`,
					`ConfigMap team-a/egress key cidrs line 1 left out: "d" is neither a CIDR nor an IP address`,
					`ConfigMap team-a/egress key cidrs line 1 left out: "e" is neither a CIDR nor an IP address`,
				},
			},
		},
		"NotesKeptSortedAndCapped": {
			reason: "Notes become warnings, sorted; beyond MaxNotesNamed they are counted.",
			found:  []Found{{Notes: manyNotes[10:]}, {Notes: manyNotes[:10]}},
			want:   Result{Warnings: append([]string{"3 more finding(s) not listed"}, manyNotes[:MaxNotesNamed]...)},
		},
		"Nothing": {
			reason: "A source without values holds no address and warns of nothing.",
			want:   Result{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := Canonical(tc.found...)
			if diff := cmp.Diff(tc.want, got, cmpPrefix, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nCanonical(...): -want, +got:\n%s", tc.reason, diff)
			}
			for _, w := range got.Warnings {
				if strings.Contains(w, "s3cr3t") {
					t.Errorf("%s\nCanonical(...) quotes an object's value: %s", tc.reason, w)
				}
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
