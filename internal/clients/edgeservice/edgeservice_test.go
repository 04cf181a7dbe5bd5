package edgeservice

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

const selfLink = APIRoot + "projects/p/regions/r/securityPolicies/net"

func params(description, policy *string) v1alpha1.NetworkEdgeSecurityServiceParameters {
	return v1alpha1.NetworkEdgeSecurityServiceParameters{Region: "r", Description: description, SecurityPolicy: policy}
}

func TestPolicyPath(t *testing.T) {
	cases := map[string]struct {
		ref  string
		want string
	}{
		"Empty":    {ref: "", want: ""},
		"Name":     {ref: "net", want: "projects/p/regions/r/securityPolicies/net"},
		"Relative": {ref: "projects/q/regions/s/securityPolicies/net", want: "projects/q/regions/s/securityPolicies/net"},
		"URL":      {ref: selfLink, want: "projects/p/regions/r/securityPolicies/net"},
		"OtherRoot": {ref: "http://127.0.0.1:8085/compute/v1/projects/p/regions/r/securityPolicies/net",
			want: "projects/p/regions/r/securityPolicies/net"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, PolicyPath(tc.ref, "p", "r")); diff != "" {
				t.Errorf("PolicyPath(%q): -want, +got:\n%s", tc.ref, diff)
			}
		})
	}
}

func TestGenerate(t *testing.T) {
	cases := map[string]struct {
		reason string
		p      v1alpha1.NetworkEdgeSecurityServiceParameters
		want   *compute.NetworkEdgeSecurityService
	}{
		"Name": {
			reason: "A policy named by name is sent as its URL in the service's project and region.",
			p:      params(new("edge"), new("net")),
			want:   &compute.NetworkEdgeSecurityService{Name: "svc", Description: "edge", SecurityPolicy: selfLink},
		},
		"Relative": {
			reason: "A relative name is sent as written.",
			p:      params(nil, new("projects/p/regions/r/securityPolicies/net")),
			want:   &compute.NetworkEdgeSecurityService{Name: "svc", SecurityPolicy: "projects/p/regions/r/securityPolicies/net"},
		},
		"NoPolicy": {
			reason: "A service without a policy sends none.",
			p:      params(nil, nil),
			want:   &compute.NetworkEdgeSecurityService{Name: "svc"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Generate("svc", "p", tc.p)); diff != "" {
				t.Errorf("%s\nGenerate(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDiffAndPatchBody(t *testing.T) {
	observed := &compute.NetworkEdgeSecurityService{Name: "svc", Description: "edge", SecurityPolicy: selfLink, Fingerprint: "f1"}
	cases := map[string]struct {
		reason   string
		p        v1alpha1.NetworkEdgeSecurityServiceParameters
		observed *compute.NetworkEdgeSecurityService
		wantMask []string
		wantBody *compute.NetworkEdgeSecurityService
	}{
		"UpToDateByName": {
			reason:   "A policy named by name is the URL GCP reports: nothing differs.",
			p:        params(new("edge"), new("net")),
			observed: observed,
		},
		"UpToDateByOtherRoot": {
			reason:   "URLs are compared from projects/ on, whatever endpoint wrote them.",
			p:        params(new("edge"), new("http://127.0.0.1:8085/compute/v1/projects/p/regions/r/securityPolicies/net")),
			observed: observed,
		},
		"UnsetIsGCPs": {
			reason:   "Fields the spec leaves unset are left as GCP has them.",
			p:        params(nil, nil),
			observed: observed,
		},
		"Description": {
			reason:   "A new description is one patch of description, with the fingerprint read.",
			p:        params(new("changed"), new("net")),
			observed: observed,
			wantMask: []string{FieldDescription},
			wantBody: &compute.NetworkEdgeSecurityService{Description: "changed", Fingerprint: "f1", ForceSendFields: []string{"Description"}},
		},
		"ClearDescription": {
			reason:   "An empty description is sent, so GCP clears it.",
			p:        params(new(""), nil),
			observed: observed,
			wantMask: []string{FieldDescription},
			wantBody: &compute.NetworkEdgeSecurityService{Fingerprint: "f1", ForceSendFields: []string{"Description"}},
		},
		"PolicyAndDescription": {
			reason:   "Both fields in one patch, in a fixed order.",
			p:        params(new("changed"), new("other")),
			observed: observed,
			wantMask: []string{FieldDescription, FieldSecurityPolicy},
			wantBody: &compute.NetworkEdgeSecurityService{Description: "changed", SecurityPolicy: APIRoot + "projects/p/regions/r/securityPolicies/other",
				Fingerprint: "f1", ForceSendFields: []string{"Description", "SecurityPolicy"}},
		},
		"PolicyWhereNone": {
			reason:   "A service without a policy gets the spec's.",
			p:        params(nil, new("net")),
			observed: &compute.NetworkEdgeSecurityService{Name: "svc", Fingerprint: "f2"},
			wantMask: []string{FieldSecurityPolicy},
			wantBody: &compute.NetworkEdgeSecurityService{SecurityPolicy: selfLink, Fingerprint: "f2", ForceSendFields: []string{"SecurityPolicy"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			mask := Diff("p", tc.p, tc.observed)
			if diff := cmp.Diff(tc.wantMask, mask, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nDiff(...): -want, +got:\n%s", tc.reason, diff)
			}
			if len(mask) == 0 {
				return
			}
			if diff := cmp.Diff(tc.wantBody, PatchBody("p", tc.p, tc.observed, mask)); diff != "" {
				t.Errorf("%s\nPatchBody(...): -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestObservation(t *testing.T) {
	s := &compute.NetworkEdgeSecurityService{Id: 1234567890123, SelfLink: "l", Fingerprint: "f", SecurityPolicy: selfLink, CreationTimestamp: "t"}
	want := v1alpha1.NetworkEdgeSecurityServiceObservation{ID: "1234567890123", SelfLink: "l", Fingerprint: "f", SecurityPolicy: selfLink, CreationTimestamp: "t"}
	if diff := cmp.Diff(want, Observation(s)); diff != "" {
		t.Errorf("Observation(...): -want, +got:\n%s", diff)
	}
}
