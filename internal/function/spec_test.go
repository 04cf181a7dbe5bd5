package function

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestValidate(t *testing.T) {
	ok := Spec{Policy: Policy{Name: "web"}, PriorityRange: PriorityRange{First: 1000, Last: 1009}}
	cases := map[string]struct {
		spec    func(Spec) Spec
		wantErr string
	}{
		"Valid":        {spec: func(s Spec) Spec { return s }},
		"NoPolicyName": {spec: func(s Spec) Spec { s.Policy.Name = ""; return s }, wantErr: "spec.policy.name is required"},
		"Reversed": {
			spec:    func(s Spec) Spec { s.PriorityRange = PriorityRange{First: 10, Last: 9}; return s },
			wantErr: "spec.priorityRange 10-9 is invalid: need 0 <= first <= last < 2147483647",
		},
		"DefaultRule": {
			spec:    func(s Spec) Spec { s.PriorityRange.Last = DefaultRulePriority; return s },
			wantErr: "spec.priorityRange 1000-2147483647 is invalid: need 0 <= first <= last < 2147483647",
		},
		"DuplicateSource": {
			spec: func(s Spec) Spec {
				s.StaticSources = []StaticSource{{Name: "web", CIDRs: []string{"10.0.0.0/8"}}}
				s.NodeSources = []NodeSource{{Name: "web"}}
				return s
			},
			wantErr: `source name "web" is used twice: source names must be unique across staticSources, nodeSources, instanceSources, natSources, serviceSources, objectSources and configMapSources`,
		},
		"NATRouter": {
			spec: func(s Spec) Spec {
				s.NATSources = []NATSource{{Name: "egress", Region: "us-central1", Router: "egress", NAT: "egress-nat"}}
				return s
			},
		},
		"NATNetwork": {
			spec: func(s Spec) Spec {
				s.NATSources = []NATSource{{Name: "egress", Network: "vpc", Regions: []string{"us-central1"}}}
				return s
			},
		},
		"NATNeither": {
			spec:    func(s Spec) Spec { s.NATSources = []NATSource{{Name: "egress", Region: "us-central1"}}; return s },
			wantErr: `nat source "egress" names exactly one of router and network`,
		},
		"NATRouterWithoutRegion": {
			spec:    func(s Spec) Spec { s.NATSources = []NATSource{{Name: "egress", Router: "egress"}}; return s },
			wantErr: `nat source "egress": router needs region`,
		},
		"NATNetworkWithoutRegions": {
			spec:    func(s Spec) Spec { s.NATSources = []NATSource{{Name: "egress", Network: "vpc"}}; return s },
			wantErr: `nat source "egress": network needs regions`,
		},
		"NATSourceNameTwice": {
			spec: func(s Spec) Spec {
				s.InstanceSources = []InstanceSource{{Name: "egress", MatchLabels: map[string]string{"pool": "a"}}}
				s.NATSources = []NATSource{{Name: "egress", Region: "us-central1", Router: "egress"}}
				return s
			},
			wantErr: `source name "egress" is used twice: source names must be unique across staticSources, nodeSources, instanceSources, natSources, serviceSources, objectSources and configMapSources`,
		},
		"AttachTo": {
			spec: func(s Spec) Spec {
				s.AttachTo = []AttachTarget{{BackendService: "web"}, {BackendService: "api"}, {BackendBucket: "web"}}
				return s
			},
		},
		"AttachToNeither": {
			spec:    func(s Spec) Spec { s.AttachTo = []AttachTarget{{}}; return s },
			wantErr: "each spec.attachTo entry needs exactly one of backendService and backendBucket",
		},
		"AttachToBoth": {
			spec: func(s Spec) Spec {
				s.AttachTo = []AttachTarget{{BackendService: "web", BackendBucket: "web"}}
				return s
			},
			wantErr: "each spec.attachTo entry needs exactly one of backendService and backendBucket",
		},
		"AttachToTwice": {
			spec: func(s Spec) Spec {
				s.AttachTo = []AttachTarget{{BackendService: "web"}, {BackendService: "web"}}
				return s
			},
			wantErr: "spec.attachTo names backend service web twice",
		},
		"BucketOfCreatedPolicy": {
			spec: func(s Spec) Spec {
				s.Policy.Create = true
				s.AttachTo = []AttachTarget{{BackendBucket: "static"}}
				return s
			},
			wantErr: "backend bucket static takes only a global CLOUD_ARMOR_EDGE policy, in its edgeSecurityPolicy: name an existing edge policy, without policy.create or policy.region",
		},
		"BucketOfRegionalPolicy": {
			spec: func(s Spec) Spec {
				s.Policy.Region = "us-central1"
				s.AttachTo = []AttachTarget{{BackendBucket: "static"}}
				return s
			},
			wantErr: "backend bucket static takes only a global CLOUD_ARMOR_EDGE policy, in its edgeSecurityPolicy: name an existing edge policy, without policy.create or policy.region",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := tc.spec(ok).Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tc.wantErr, got); diff != "" {
				t.Errorf("Validate(): -want error, +got error:\n%s", diff)
			}
		})
	}
}
