package networkedgesecurityservice

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"google.golang.org/api/compute/v1"
	"google.golang.org/api/googleapi"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/crossplane/crossplane-runtime/v2/pkg/event"
	"github.com/crossplane/crossplane-runtime/v2/pkg/meta"
	"github.com/crossplane/crossplane-runtime/v2/pkg/reconciler/managed"
	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1alpha1"
	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp"
	"github.com/armorplane/provider-cloudarmor/internal/clients/gcp/gcptest"
)

const policyURL = "https://www.googleapis.com/compute/v1/projects/p/regions/r/securityPolicies/net"

var key = gcp.EdgeServiceKey{Project: "p", Region: "r", Name: "edge"}

const tierMsg = "Invalid value for field 'resource.securityPolicy': '" + policyURL + "'. Network edge security policies need Cloud Armor Enterprise; project 'p' is on CA_STANDARD."

// service is what GCP holds.
func service() *compute.NetworkEdgeSecurityService {
	return &compute.NetworkEdgeSecurityService{Name: "edge", Id: 7, Description: "edge", SecurityPolicy: policyURL, Fingerprint: "f1",
		SelfLink: "https://www.googleapis.com/compute/v1/projects/p/regions/r/networkEdgeSecurityServices/edge"}
}

// object is a NetworkEdgeSecurityService; created says it recorded
// creating its service.
func object(created bool, mod ...func(*v1alpha1.NetworkEdgeSecurityService)) *v1alpha1.NetworkEdgeSecurityService {
	cr := &v1alpha1.NetworkEdgeSecurityService{ObjectMeta: metav1.ObjectMeta{Name: "edge", Namespace: "team-a"}}
	cr.Spec.ForProvider = v1alpha1.NetworkEdgeSecurityServiceParameters{Region: "r", Description: new("edge"), SecurityPolicy: new("net")}
	meta.SetExternalName(cr, "edge")
	if created {
		meta.SetExternalCreateSucceeded(cr, time.Unix(1, 0))
	}
	for _, m := range mod {
		m(cr)
	}
	return cr
}

func describe(d string) func(*v1alpha1.NetworkEdgeSecurityService) {
	return func(cr *v1alpha1.NetworkEdgeSecurityService) { cr.Spec.ForProvider.Description = &d }
}

func policies(p ...xpv2.ManagementAction) func(*v1alpha1.NetworkEdgeSecurityService) {
	return func(cr *v1alpha1.NetworkEdgeSecurityService) { cr.SetManagementPolicies(p) }
}

func deleting(cr *v1alpha1.NetworkEdgeSecurityService) {
	now := metav1.Now()
	cr.SetDeletionTimestamp(&now)
}

func dryRun(cr *v1alpha1.NetworkEdgeSecurityService) {
	meta.AddAnnotations(cr, map[string]string{v1beta1.AnnotationDryRun: "true"})
}

// enterprise is a project on Cloud Armor Enterprise.
func enterprise() *gcptest.Projects {
	return &gcptest.Projects{TierFn: func(string) (string, error) { return gcp.TierEnterprisePaygo, nil }}
}

func notFound() error { return &googleapi.Error{Code: http.StatusNotFound, Message: "not found"} }

func holding(s *compute.NetworkEdgeSecurityService) func() (*compute.NetworkEdgeSecurityService, error) {
	return func() (*compute.NetworkEdgeSecurityService, error) {
		if s == nil {
			return nil, notFound()
		}
		return s, nil
	}
}

func TestObserve(t *testing.T) {
	type want struct {
		o       managed.ExternalObservation
		err     string
		calls   []string
		atProv  v1alpha1.NetworkEdgeSecurityServiceObservation
		ready   corev1.ConditionStatus
		valid   xpv2.ConditionReason
		dryHash bool
	}
	observed := v1alpha1.NetworkEdgeSecurityServiceObservation{ID: "7", SelfLink: service().SelfLink, Fingerprint: "f1", SecurityPolicy: policyURL}
	cases := map[string]struct {
		reason   string
		gcp      *compute.NetworkEdgeSecurityService
		validate func(*compute.NetworkEdgeSecurityService) error
		cr       *v1alpha1.NetworkEdgeSecurityService
		want     want
	}{
		"Missing": {
			reason: "A service GCP does not have does not exist: Create makes it.",
			cr:     object(false),
			want:   want{o: managed.ExternalObservation{ResourceExists: false}, calls: []string{"Get"}},
		},
		"UpToDate": {
			reason: "The service this object created, holding the spec, is up to date and Ready.",
			gcp:    service(),
			cr:     object(true),
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"Get"}, atProv: observed, ready: corev1.ConditionTrue},
		},
		"DescriptionDiffers": {
			reason: "A changed description needs an update, named in the diff.",
			gcp:    service(),
			cr:     object(true, describe("changed")),
			want:   want{o: managed.ExternalObservation{ResourceExists: true, Diff: "patch description"}, calls: []string{"Get"}, atProv: observed, ready: corev1.ConditionTrue},
		},
		"NotCreated": {
			reason: "A service this object did not create is refused: no label says who owns it.",
			gcp:    service(),
			cr:     object(false),
			want:   want{err: "this object did not create it", calls: []string{"Get"}},
		},
		"NotCreatedWhileDeleting": {
			reason: "Deleting an object refused its service reports it gone: it stays in GCP.",
			gcp:    service(),
			cr:     object(false, deleting),
			want:   want{o: managed.ExternalObservation{ResourceExists: false}, calls: []string{"Get"}},
		},
		"AdoptWithoutCreate": {
			reason: "An object whose management policies leave out Create takes over the service it names.",
			gcp:    service(),
			cr:     object(false, describe("changed"), policies(xpv2.ManagementActionObserve, xpv2.ManagementActionUpdate)),
			want:   want{o: managed.ExternalObservation{ResourceExists: true, Diff: "patch description"}, calls: []string{"Get"}, atProv: observed, ready: corev1.ConditionTrue},
		},
		"ObserveOnly": {
			reason: "An observe-only object reads any service.",
			gcp:    service(),
			cr:     object(false, policies(xpv2.ManagementActionObserve)),
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"Get"}, atProv: observed, ready: corev1.ConditionTrue},
		},
		"DeleteOwn": {
			reason: "Deleting the object that created its service deletes it.",
			gcp:    service(),
			cr:     object(true, deleting),
			want:   want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"Get"}, atProv: observed, ready: corev1.ConditionTrue},
		},
		"DryRunMissingAccepted": {
			reason:   "In dry run, a missing service is asked about with validateOnly: GCP accepts.",
			cr:       object(false, dryRun),
			validate: func(*compute.NetworkEdgeSecurityService) error { return nil },
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"Get", "ValidateInsert"},
				ready: corev1.ConditionFalse, valid: v1beta1.ReasonAccepted, dryHash: true},
		},
		"DryRunMissingRefused": {
			reason: "In dry run, GCP's refusal is the Validated condition, not an error.",
			cr:     object(false, dryRun),
			validate: func(*compute.NetworkEdgeSecurityService) error {
				return &googleapi.Error{Code: http.StatusBadRequest, Message: tierMsg}
			},
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"Get", "ValidateInsert"},
				ready: corev1.ConditionFalse, valid: v1beta1.ReasonRefused, dryHash: true},
		},
		"DryRunMissingUnavailable": {
			reason: "In dry run, a 503 says nothing about the insert: an error, retried.",
			cr:     object(false, dryRun),
			validate: func(*compute.NetworkEdgeSecurityService) error {
				return &googleapi.Error{Code: http.StatusServiceUnavailable, Message: "backend"}
			},
			want: want{err: "cannot ask GCP to validate", calls: []string{"Get", "ValidateInsert"}, ready: corev1.ConditionFalse},
		},
		"DryRunDiffers": {
			reason: "In dry run, a patch cannot be asked about: NotAsked, nothing written.",
			gcp:    service(),
			cr:     object(true, dryRun, describe("changed")),
			want: want{o: managed.ExternalObservation{ResourceExists: true, ResourceUpToDate: true}, calls: []string{"Get"},
				atProv: observed, ready: corev1.ConditionFalse, valid: v1beta1.ReasonNotAsked},
		},
		"DryRunNotCreated": {
			reason: "A refused object stays refused in dry run.",
			gcp:    service(),
			cr:     object(false, dryRun),
			want:   want{err: "this object did not create it", calls: []string{"Get"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &gcptest.EdgeServices{GetFn: holding(tc.gcp), ValidateInsertFn: tc.validate}
			e := &external{services: f, projects: enterprise(), key: key, recorder: event.NewNopRecorder()}
			got, err := e.Observe(context.Background(), tc.cr)
			if tc.want.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want.err) {
					t.Fatalf("%s\nObserve(...): want error containing %q, got %v", tc.reason, tc.want.err, err)
				}
			} else if err != nil {
				t.Fatalf("%s\nObserve(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.want.o, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("%s\nObserve(...): -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.calls, f.Methods()); diff != "" {
				t.Errorf("%s\nGCP calls: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.want.atProv, tc.cr.Status.AtProvider); diff != "" {
				t.Errorf("%s\nstatus.atProvider: -want, +got:\n%s", tc.reason, diff)
			}
			if tc.want.ready != "" {
				if got := tc.cr.GetCondition(xpv2.TypeReady).Status; got != tc.want.ready {
					t.Errorf("%s\nReady: want %s, got %s", tc.reason, tc.want.ready, got)
				}
			}
			if got := tc.cr.GetCondition(v1beta1.TypeValidated).Reason; got != tc.want.valid {
				t.Errorf("%s\nValidated reason: want %q, got %q", tc.reason, tc.want.valid, got)
			}
			if got := tc.cr.Status.DryRun != nil && tc.cr.Status.DryRun.RequestHash != ""; got != tc.want.dryHash {
				t.Errorf("%s\nstatus.dryRun.requestHash set: want %v, got %v", tc.reason, tc.want.dryHash, got)
			}
		})
	}
}

// TestDryRunAsksOnce: GCP answers an insert once; the next polls ask again
// only when the insert changes, and the annotation's removal clears it all.
func TestDryRunAsksOnce(t *testing.T) {
	f := &gcptest.EdgeServices{GetFn: holding(nil), ValidateInsertFn: func(*compute.NetworkEdgeSecurityService) error {
		return &googleapi.Error{Code: http.StatusBadRequest, Message: tierMsg}
	}}
	e := &external{services: f, projects: enterprise(), key: key, recorder: event.NewNopRecorder()}
	cr := object(false, dryRun)
	for range 3 {
		if _, err := e.Observe(context.Background(), cr); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"Get", "ValidateInsert", "Get", "Get"}, f.Methods()); diff != "" {
		t.Errorf("three polls of one insert: -want, +got:\n%s", diff)
	}
	if c := cr.GetCondition(v1beta1.TypeValidated); !strings.Contains(c.Message, "need Cloud Armor Enterprise") {
		t.Errorf("Validated message: want GCP's, got %q", c.Message)
	}
	describe("changed")(cr)
	if _, err := e.Observe(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"Get", "ValidateInsert", "Get", "Get", "Get", "ValidateInsert"}, f.Methods()); diff != "" {
		t.Errorf("a changed insert is asked again: -want, +got:\n%s", diff)
	}
	meta.RemoveAnnotations(cr, v1beta1.AnnotationDryRun)
	if _, err := e.Observe(context.Background(), cr); err != nil {
		t.Fatal(err)
	}
	if cr.Status.DryRun != nil || cr.GetCondition(v1beta1.TypeValidated).Reason != "" {
		t.Errorf("the dry run's status outlived the annotation: %+v, %+v", cr.Status.DryRun, cr.GetCondition(v1beta1.TypeValidated))
	}
}

func TestCreate(t *testing.T) {
	cases := map[string]struct {
		reason   string
		insert   error
		wantBody *compute.NetworkEdgeSecurityService
		wantErr  string
	}{
		"Insert": {
			reason:   "Create inserts the service, its policy by URL.",
			wantBody: &compute.NetworkEdgeSecurityService{Name: "edge", Description: "edge", SecurityPolicy: policyURL},
		},
		"StandardTier": {
			reason:   "GCP's refusal is Create's error, with GCP's message, for Synced=False.",
			insert:   &googleapi.Error{Code: http.StatusBadRequest, Message: tierMsg},
			wantBody: &compute.NetworkEdgeSecurityService{Name: "edge", Description: "edge", SecurityPolicy: policyURL},
			wantErr:  "Network edge security policies need Cloud Armor Enterprise",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var body *compute.NetworkEdgeSecurityService
			f := &gcptest.EdgeServices{InsertFn: func(s *compute.NetworkEdgeSecurityService) error { body = s; return tc.insert }}
			e := &external{services: f, projects: enterprise(), key: key, recorder: event.NewNopRecorder()}
			_, err := e.Create(context.Background(), object(false))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nCreate(...): want error containing %q, got %v", tc.reason, tc.wantErr, err)
				}
			} else if err != nil {
				t.Fatalf("%s\nCreate(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.wantBody, body); diff != "" {
				t.Errorf("%s\ninserted: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff([]string{"Insert"}, f.Methods()); diff != "" {
				t.Errorf("%s\nGCP calls: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestUpdate(t *testing.T) {
	cases := map[string]struct {
		reason    string
		cr        *v1alpha1.NetworkEdgeSecurityService
		patch     error
		wantCalls []string
		wantBody  *compute.NetworkEdgeSecurityService
		wantErr   string
	}{
		"Description": {
			reason:    "A changed description is one patch, masked to it, with the fingerprint just read.",
			cr:        object(true, describe("changed")),
			wantCalls: []string{"Get", "Patch description"},
			wantBody:  &compute.NetworkEdgeSecurityService{Description: "changed", Fingerprint: "f1", ForceSendFields: []string{"Description"}},
		},
		"Policy": {
			reason: "Another policy is one patch of securityPolicy.",
			cr: object(true, func(cr *v1alpha1.NetworkEdgeSecurityService) {
				cr.Spec.ForProvider.SecurityPolicy = new("projects/p/regions/r/securityPolicies/other")
			}),
			wantCalls: []string{"Get", "Patch securityPolicy"},
			wantBody: &compute.NetworkEdgeSecurityService{SecurityPolicy: "projects/p/regions/r/securityPolicies/other", Fingerprint: "f1",
				ForceSendFields: []string{"SecurityPolicy"}},
		},
		"NothingLeft": {
			reason:    "A service already up to date when Update reads it is not written.",
			cr:        object(true),
			wantCalls: []string{"Get"},
		},
		"Stale": {
			reason:    "A 412 (another writer changed the service) is Update's error: the next reconcile reads afresh.",
			cr:        object(true, describe("changed")),
			patch:     &googleapi.Error{Code: http.StatusPreconditionFailed, Message: "Supplied fingerprint does not match current metadata fingerprint."},
			wantCalls: []string{"Get", "Patch description"},
			wantBody:  &compute.NetworkEdgeSecurityService{Description: "changed", Fingerprint: "f1", ForceSendFields: []string{"Description"}},
			wantErr:   "fingerprint does not match",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var body *compute.NetworkEdgeSecurityService
			f := &gcptest.EdgeServices{GetFn: holding(service()), PatchFn: func(s *compute.NetworkEdgeSecurityService, _ []string) error { body = s; return tc.patch }}
			e := &external{services: f, projects: enterprise(), key: key, recorder: event.NewNopRecorder()}
			_, err := e.Update(context.Background(), tc.cr)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("%s\nUpdate(...): want error containing %q, got %v", tc.reason, tc.wantErr, err)
				}
			} else if err != nil {
				t.Fatalf("%s\nUpdate(...): %v", tc.reason, err)
			}
			if diff := cmp.Diff(tc.wantCalls, f.Methods()); diff != "" {
				t.Errorf("%s\nGCP calls: -want, +got:\n%s", tc.reason, diff)
			}
			if diff := cmp.Diff(tc.wantBody, body); diff != "" {
				t.Errorf("%s\npatched: -want, +got:\n%s", tc.reason, diff)
			}
		})
	}
}

func TestDelete(t *testing.T) {
	cases := map[string]struct {
		reason  string
		err     error
		wantErr bool
	}{
		"Deleted":   {reason: "Delete deletes the service."},
		"Gone":      {reason: "A service already gone is deleted.", err: notFound()},
		"Refused":   {reason: "GCP's refusal is Delete's error.", err: &googleapi.Error{Code: http.StatusBadRequest, Message: "no"}, wantErr: true},
		"Transient": {reason: "A 503 is Delete's error.", err: &googleapi.Error{Code: http.StatusServiceUnavailable}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := &gcptest.EdgeServices{DeleteFn: func() error { return tc.err }}
			e := &external{services: f, projects: enterprise(), key: key, recorder: event.NewNopRecorder()}
			cr := object(true, deleting)
			_, err := e.Delete(context.Background(), cr)
			if (err != nil) != tc.wantErr {
				t.Fatalf("%s\nDelete(...): want error %v, got %v", tc.reason, tc.wantErr, err)
			}
			if diff := cmp.Diff([]string{"Delete"}, f.Methods()); diff != "" {
				t.Errorf("%s\nGCP calls: -want, +got:\n%s", tc.reason, diff)
			}
			if got := cr.GetCondition(xpv2.TypeReady).Reason; got != xpv2.ReasonDeleting {
				t.Errorf("%s\nReady reason: want %s, got %s", tc.reason, xpv2.ReasonDeleting, got)
			}
		})
	}
}

func TestKey(t *testing.T) {
	cr := object(false)
	meta.SetExternalName(cr, "other")
	if diff := cmp.Diff("projects/p/regions/r/networkEdgeSecurityServices/other", Key(cr, "p").String()); diff != "" {
		t.Errorf("Key(...): -want, +got:\n%s", diff)
	}
}
