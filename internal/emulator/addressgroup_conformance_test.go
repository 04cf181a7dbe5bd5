package emulator

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/api/googleapi"
	networksecurity "google.golang.org/api/networksecurity/v1"
)

// agFixture is one real GCP recording of address groups (see
// testdata/recordings/addressgroups/README.md).
type agFixture struct {
	// source is where the recording comes from: repository and path.
	source string
	// older: recorded before GCP stopped printing false booleans ("done":
	// false, "requestedCancellation": false); the emulator follows the newer
	// recordings, so these are dropped from the expected answers.
	older bool
	// defaultedPurpose: GCP then answered purpose ["DEFAULT"] for a group
	// created without one; the newer recordings show no purpose, as the
	// emulator does, so the expected answers drop it.
	defaultedPurpose bool
}

var agFixtures = map[string]agFixture{
	"kcc_minimal_http.log": {source: "GoogleCloudPlatform/k8s-config-connector pkg/test/resourcefixture/testdata/basic/networksecurity/v1alpha1/networksecurityaddressgroup/networksecurityaddressgroup-minimal/_http.log"},
	"kcc_maximal_http.log": {source: "GoogleCloudPlatform/k8s-config-connector pkg/test/resourcefixture/testdata/basic/networksecurity/v1alpha1/networksecurityaddressgroup/networksecurityaddressgroup-maximal/_http.log"},
	"kcc_basic_http.log": {older: true,
		source: "GoogleCloudPlatform/k8s-config-connector pkg/test/resourcefixture/testdata/basic/networksecurity/v1alpha1/addressgroup-basic/_http.log"},
	"mockgcp_project_crud_http.log": {older: true, defaultedPurpose: true,
		source: "GoogleCloudPlatform/k8s-config-connector mockgcp/mocknetworksecurity/testdata/addressgroup/crud/_http.log"},
	"mockgcp_org_crud_http.log": {older: true, defaultedPurpose: true,
		source: "GoogleCloudPlatform/k8s-config-connector mockgcp/mocknetworksecurity/testdata/orgaddressgroup/crud/_http.log"},
}

// The enums by number, as the recordings send and receive them with
// "$alt=json;enum-encoding=int" (type 1 is IPV4, purpose 1 DEFAULT).
var (
	groupTypes    = []string{"TYPE_UNSPECIFIED", "IPV4", "IPV6"}
	groupPurposes = []string{"PURPOSE_UNSPECIFIED", "DEFAULT", "CLOUD_ARMOR"}
)

// TestAddressGroupConformance replays every exchange of each recording, in
// order, against a fresh emulator, twice: through the official Go client
// (google.golang.org/api/networksecurity/v1), and as the recorded HTTP
// request itself (which keeps "$alt=json;enum-encoding=int"). It compares
// the status and every field of the answer, times and operation ids aside.
func TestAddressGroupConformance(t *testing.T) {
	files, err := filepath.Glob("testdata/recordings/addressgroups/*_http.log")
	if err != nil || len(files) != len(agFixtures) {
		t.Fatalf("want the %d address group recordings, got %v (%v)", len(agFixtures), files, err)
	}
	for _, f := range files {
		fx, ok := agFixtures[filepath.Base(f)]
		if !ok {
			t.Fatalf("%s: no source recorded for it", f)
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, viaClient := range []bool{true, false} {
			name := strings.TrimSuffix(filepath.Base(f), "_http.log") + map[bool]string{true: "/Client", false: "/HTTP"}[viaClient]
			t.Run(name, func(t *testing.T) {
				replayGroups(t, fx, string(b), viaClient)
			})
		}
	}
}

// agReplay carries what a client learns while a recording is replayed.
type agReplay struct {
	op string // the last operation's id
}

// fill puts values in the recording's placeholders. ${organizationID} is a
// slip of KCC's normaliser in front of the real organization number.
func (s *agReplay) fill(text string) string {
	return strings.NewReplacer("${projectId}", "conformance-project", "${uniqueId}", "u1",
		"${organizationID}", "", "${operationID}", s.op).Replace(text)
}

func replayGroups(t *testing.T, fx agFixture, log string, viaClient bool) {
	em := Start(t, Options{Seed: 7})
	svc := newGroupsService(t, em)
	st := &agReplay{}
	for i, ex := range parseLog(t, log) {
		u, err := url.Parse(st.fill(ex.url))
		if err != nil {
			t.Fatal(err)
		}
		reqBody := st.fill(ex.reqBody)
		var status int
		var got map[string]any
		if viaClient {
			status, got = clientExchange(t, svc, ex.method, u, reqBody)
		} else {
			status, got = httpExchange(t, em, ex.method, u, reqBody)
		}
		if name, _ := got["name"].(string); strings.Contains(name, "/operations/") {
			st.op = name[strings.LastIndex(name, "/")+1:]
		}
		if status != ex.status {
			t.Fatalf("exchange %d %s %s: status: want %d, got %d: %v", i, ex.method, u.Path, ex.status, status, got)
		}
		var want map[string]any
		mustUnmarshal(t, st.fill(ex.respBody), &want)
		want = expectedAnswer(want, fx, viaClient)
		if diff := cmp.Diff(stripTimes(want), stripTimes(got)); diff != "" {
			t.Errorf("exchange %d %s %s: -want (recorded), +got:\n%s", i, ex.method, u.Path, diff)
		}
	}
}

// expectedAnswer applies to a recorded answer what is known to differ: the
// older recordings' false booleans and defaulted purpose, and, through the
// Go client (which does not ask for numbers), enums as names.
func expectedAnswer(want map[string]any, fx agFixture, viaClient bool) map[string]any {
	var walk func(m map[string]any)
	walk = func(m map[string]any) {
		for k, v := range m {
			switch x := v.(type) {
			case bool:
				if !x && fx.older && (k == "done" || k == "requestedCancellation") {
					delete(m, k)
				}
			case float64:
				if k == "type" && viaClient {
					m[k] = groupTypes[int(x)]
				}
			case []any:
				if k == "purpose" && fx.defaultedPurpose && len(x) == 1 && x[0] == "DEFAULT" {
					delete(m, k)
					continue
				}
				for i, e := range x {
					if n, ok := e.(float64); ok && k == "purpose" && viaClient {
						x[i] = groupPurposes[int(n)]
					}
				}
			case map[string]any:
				walk(x)
			}
		}
	}
	walk(want)
	return want
}

// stripTimes replaces generated times with a marker, so that only their
// presence is compared.
func stripTimes(v any) any {
	switch x := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			if k == "createTime" || k == "updateTime" || k == "endTime" {
				out[k] = "<time>"
				continue
			}
			out[k] = stripTimes(e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = stripTimes(e)
		}
		return out
	}
	return v
}

// httpExchange sends the recorded request as it was, to the emulator.
func httpExchange(t *testing.T, em *Running, method string, u *url.URL, body string) (int, map[string]any) {
	t.Helper()
	var header map[string]string
	if body != "" {
		header = map[string]string{"Content-Type": "application/json"}
	}
	res, b := rawCall(t, method, em.URL()+u.RequestURI(), body, header)
	if ct := res.Header.Get("Content-Type"); ct != "application/json; charset=UTF-8" {
		t.Errorf("%s %s: Content-Type %q", method, u.Path, ct)
	}
	var got map[string]any
	mustUnmarshal(t, b, &got)
	return res.StatusCode, got
}

// clientExchange makes the call the recorded request is with the official
// client, and returns its answer as JSON: the decoded result re-encoded, or
// the error body.
func clientExchange(t *testing.T, svc *networksecurity.Service, method string, u *url.URL, body string) (int, map[string]any) {
	t.Helper()
	name := strings.TrimPrefix(u.Path, "/v1/")
	api := groupsFor(svc, name)
	q := u.Query()
	group := func() *networksecurity.AddressGroup {
		var g networksecurity.AddressGroup
		mustUnmarshal(t, namedEnums(t, body), &g)
		return &g
	}
	items := func() []string {
		var in struct{ Items []string }
		mustUnmarshal(t, body, &in)
		return in.Items
	}
	var res any
	var err error
	switch {
	case method == "POST" && strings.HasSuffix(name, "/addressGroups"):
		res, err = api.create(strings.TrimSuffix(name, "/addressGroups"), q.Get("addressGroupId"), group())
	case method == "POST" && strings.HasSuffix(name, ":addItems"):
		res, err = api.addItems(strings.TrimSuffix(name, ":addItems"), items()...)
	case method == "POST" && strings.HasSuffix(name, ":removeItems"):
		res, err = api.removeItems(strings.TrimSuffix(name, ":removeItems"), items()...)
	case method == "GET" && strings.Contains(name, "/operations/"):
		res, err = api.op(name)
	case method == "GET":
		res, err = api.get(name)
	case method == "PATCH":
		res, err = api.patch(name, q.Get("updateMask"), group())
	case method == "DELETE":
		res, err = api.delete(name)
	default:
		t.Fatalf("no client call for %s %s", method, u)
	}
	var got map[string]any
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		mustUnmarshal(t, ge.Body, &got)
		return ge.Code, got
	}
	if err != nil {
		t.Fatalf("%s %s: %v", method, name, err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	mustUnmarshal(t, string(b), &got)
	return http.StatusOK, got
}

// namedEnums rewrites a recorded body's numeric enums as names, which is
// what the Go client's string fields hold.
func namedEnums(t *testing.T, body string) string {
	t.Helper()
	var m map[string]any
	mustUnmarshal(t, body, &m)
	if n, ok := m["type"].(float64); ok {
		m["type"] = groupTypes[int(n)]
	}
	if list, ok := m["purpose"].([]any); ok {
		for i, e := range list {
			if n, ok := e.(float64); ok {
				list[i] = groupPurposes[int(n)]
			}
		}
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
