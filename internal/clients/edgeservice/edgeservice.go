// Package edgeservice maps NetworkEdgeSecurityService managed resources to
// compute v1 network edge security services and says what differs between
// an object and the service GCP holds: the update mask of one patch.
package edgeservice

import (
	"strconv"
	"strings"

	"google.golang.org/api/compute/v1"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
)

// APIRoot is the root of compute v1 URLs, which a policy named by name is
// sent under.
const APIRoot = "https://www.googleapis.com/compute/v1/"

// Update mask paths: the only fields of a service GCP changes.
const (
	FieldDescription    = "description"
	FieldSecurityPolicy = "securityPolicy"
)

// PolicyPath is the relative resource name
// (projects/P/regions/R/securityPolicies/N) of the policy ref names, ref
// being a policy's name, relative name or URL; project and region are the
// service's, which a name is taken to be in. "" stays "".
func PolicyPath(ref, project, region string) string {
	switch {
	case ref == "":
		return ""
	case strings.HasPrefix(ref, "projects/"):
		return ref
	}
	if i := strings.Index(ref, "/projects/"); i >= 0 {
		return ref[i+1:]
	}
	return "projects/" + project + "/regions/" + region + "/securityPolicies/" + ref
}

// policyURL is what GCP is sent for ref: a URL or relative name as the user
// wrote it, a bare name as the URL of the service's project and region.
func policyURL(ref, project, region string) string {
	if ref == "" || strings.Contains(ref, "/") {
		return ref
	}
	return APIRoot + PolicyPath(ref, project, region)
}

// Generate is the service named name to insert for p in project.
func Generate(name, project string, p v1alpha1.NetworkEdgeSecurityServiceParameters) *compute.NetworkEdgeSecurityService {
	s := &compute.NetworkEdgeSecurityService{Name: name}
	if p.Description != nil {
		s.Description = *p.Description
	}
	if p.SecurityPolicy != nil {
		s.SecurityPolicy = policyURL(*p.SecurityPolicy, project, p.Region)
	}
	return s
}

// Diff is the update mask of the fields of observed that differ from p, in
// a fixed order; empty when the service is up to date. A field p leaves
// unset is GCP's to keep.
func Diff(project string, p v1alpha1.NetworkEdgeSecurityServiceParameters, observed *compute.NetworkEdgeSecurityService) []string {
	var mask []string
	if p.Description != nil && *p.Description != observed.Description {
		mask = append(mask, FieldDescription)
	}
	if p.SecurityPolicy != nil && PolicyPath(*p.SecurityPolicy, project, p.Region) != PolicyPath(observed.SecurityPolicy, project, p.Region) {
		mask = append(mask, FieldSecurityPolicy)
	}
	return mask
}

// PatchBody is the body of the patch that sets the mask's fields to p's
// values, carrying observed's fingerprint so that GCP refuses it if the
// service changed since it was read. Empty values are sent, so that GCP
// clears them.
func PatchBody(project string, p v1alpha1.NetworkEdgeSecurityServiceParameters, observed *compute.NetworkEdgeSecurityService, mask []string) *compute.NetworkEdgeSecurityService {
	want := Generate(observed.Name, project, p)
	s := &compute.NetworkEdgeSecurityService{Fingerprint: observed.Fingerprint}
	for _, f := range mask {
		switch f {
		case FieldDescription:
			s.Description = want.Description
			s.ForceSendFields = append(s.ForceSendFields, "Description")
		case FieldSecurityPolicy:
			s.SecurityPolicy = want.SecurityPolicy
			s.ForceSendFields = append(s.ForceSendFields, "SecurityPolicy")
		}
	}
	return s
}

// Observation is the service as its status shows it.
func Observation(s *compute.NetworkEdgeSecurityService) v1alpha1.NetworkEdgeSecurityServiceObservation {
	o := v1alpha1.NetworkEdgeSecurityServiceObservation{
		SelfLink:          s.SelfLink,
		Fingerprint:       s.Fingerprint,
		SecurityPolicy:    s.SecurityPolicy,
		CreationTimestamp: s.CreationTimestamp,
	}
	if s.Id != 0 {
		o.ID = strconv.FormatUint(s.Id, 10)
	}
	return o
}
