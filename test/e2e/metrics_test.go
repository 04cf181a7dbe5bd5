package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	xpv2 "github.com/crossplane/crossplane/apis/v2/core/v2"

	"github.com/armorplane/provider-cloudarmor/apis/cloudarmor/v1beta1"
	pcv1beta1 "github.com/armorplane/provider-cloudarmor/apis/v1beta1"
	"github.com/armorplane/provider-cloudarmor/test/framework/armor"
	"github.com/armorplane/provider-cloudarmor/test/framework/platform"
)

// TestMetrics checks the provider's /metrics against what GCP (the emulator)
// served it. The managed resources use a ProviderConfig whose endpoint is a
// recording proxy in front of the emulator, so every call the provider makes
// is seen three times: by the provider's own counters, by the proxy (method
// and HTTP status as sent back) and by the emulator's per-method counters
// (/_emulator/stats). The three must agree by method, and the provider and
// the proxy by method and code, once the counts have settled.
//
// The provider's pod serves /metrics on :8080 (its --metrics-bind-address
// default), reached through a forwarder to the pod's IP. Its counters count
// every suite that ran on the node since the pod started: what is compared
// is each series less its value when the test began (scrape.since).
func TestMetrics(t *testing.T) {
	// The recorded ProviderConfigs name a recording proxy in front of the
	// emulator, granted with it.
	var rec *callRecorder
	s := setupRuntime(t, func(*platform.Platform, map[string]any) {}, func(s *suite) []string {
		rec = newCallRecorder(t, s.emu.URL())
		rec.endpoint = "http://" + s.expose(t, strings.TrimPrefix(rec.srv.URL, "http://")) + "/compute/v1/"
		return []string{rec.endpoint}
	})
	pod, ip, err := s.plat.ProviderPod(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	fwd, err := s.plat.Node.Forward("127.0.0.1:0", net.JoinHostPort(ip, "8080"))
	if err != nil {
		t.Fatal(err)
	}
	s.metricsURL = "http://" + fwd + "/metrics"
	s.metricsBase = s.scrapeTotal(t)
	t.Logf("pod %s's /metrics at %s", pod, s.metricsURL)
	ns, other, region := s.ns, s.ns+"-other", "europe-west1"
	for _, n := range []string{ns, other} {
		s.recordedConfig(t, n, rec.endpoint)
	}
	// Over a poll with no managed resource of this test: what the counts
	// below hold is this test's alone.
	time.Sleep(poll + pollJitter)
	if got := s.scrape(t).calls(); len(got) != 0 {
		t.Fatalf("the provider made GCP calls before any managed resource of this test existed: %v", got)
	}

	// A global policy with inline rules, one of which a rule object claims;
	// a rule object it adds, later edited, and a newer duplicate of it; a
	// rule GCP refuses; a rule from a namespace the policy does not admit;
	// a regional policy. Together they make every write method, a 404, a
	// 400, and each ownership decision the provider counts.
	global := inNamespace(ns, armor.NewPolicy("m-global", func(p *v1beta1.SecurityPolicyParameters) {
		p.DefaultRule = &v1beta1.RuleParameters{Action: "deny(403)"}
		p.Rules = []v1beta1.PolicyRule{armor.AllowRule(100, "10.0.0.0/8"), armor.AllowRule(200, "10.1.0.0/16")}
	}))
	claimed := inNamespace(ns, armor.NewRule("m-global-200", "m-global", armor.AllowRule(200, "172.16.0.0/12")))
	added := inNamespace(ns, armor.NewRule("m-global-300", "m-global", armor.AllowRule(300, "192.168.0.0/16")))
	broken := inNamespace(ns, armor.NewRule("m-global-cel", "m-global", v1beta1.PolicyRule{Priority: 400,
		RuleParameters: v1beta1.RuleParameters{Action: "deny(403)", Match: &v1beta1.RuleMatcher{Expr: &v1beta1.Expr{Expression: "this is ((( not CEL"}}}}))
	outsider := inNamespace(other, armor.NewRule("m-outsider", "", armor.AllowRule(500, "198.51.100.0/24")))
	outsider.Spec.ForProvider.SecurityPolicyRef = nil
	outsider.Spec.ForProvider.SecurityPolicy = armor.Ptr("m-global")
	regional := inNamespace(ns, armor.NewPolicy("m-regional", func(p *v1beta1.SecurityPolicyParameters) {
		p.Region = armor.Ptr(region)
		p.DefaultRule = &v1beta1.RuleParameters{Action: "allow"}
	}))
	s.create(t, global, claimed, added, broken, outsider, regional)
	for _, o := range []client.Object{global, claimed, added, regional} {
		s.waitReady(t, o)
	}
	duplicate := inNamespace(ns, armor.NewRule("m-global-300-dup", "m-global", armor.AllowRule(300, "203.0.113.0/24")))
	s.create(t, duplicate)
	s.update(t, global, func() { global.Spec.ForProvider.Description = armor.Ptr("edited") })
	s.update(t, added, func() { added.Spec.ForProvider.Match.Config.SrcIpRanges = []v1beta1.IPRange{"192.168.0.0/24"} })
	for o, msg := range map[*v1beta1.SecurityPolicyRule]string{
		broken:    "The expression is not valid",
		duplicate: "managed by SecurityPolicyRule " + ns + "/m-global-300",
		outsider:  "does not admit SecurityPolicyRules from namespace",
	} {
		s.waitCondition(t, o, "Synced=False with "+msg, func(c map[string]condition) error {
			if c["Synced"].Status != "False" || !strings.Contains(c["Synced"].Message, msg) {
				return fmt.Errorf("Synced=%s", c["Synced"])
			}
			return nil
		})
	}
	s.waitGCPRulesQuietly(t, s.project, "", "m-global", []string{"100:allow:10.0.0.0/8", "200:allow:172.16.0.0/12", "300:allow:192.168.0.0/24", "2147483647:deny(403):*"})
	s.waitReady(t, global)

	// While the provider polls: its counters agree with the emulator's at
	// some instant at which no call is in flight.
	s.eventually(t, waitFor, "the provider's, the proxy's and the emulator's counts to agree while polling", func() error {
		return s.agree(t, rec, false)
	})
	sc := s.scrape(t)
	for _, c := range []struct {
		series string
		min    float64
	}{
		{`cloudarmor_gcp_calls_total{code="404",method="Get"}`, 1},     // the policies before they existed
		{`cloudarmor_gcp_calls_total{code="400",method="AddRule"}`, 1}, // the broken expression
		{`cloudarmor_gcp_calls_total{code="200",method="Patch"}`, 1},
		{`cloudarmor_gcp_calls_total{code="200",method="PatchRule"}`, 1},
		{`cloudarmor_gcp_operations_total{method="Insert",result="done"}`, 2},
		{`cloudarmor_gcp_operation_wait_seconds_count{method="Insert"}`, 2},
		{`cloudarmor_gcp_write_queue_wait_seconds_count`, 5},
		{`cloudarmor_ownership_conflicts_total{kind="SecurityPolicy",reason="PriorityClaimed"}`, 1},
		{`cloudarmor_ownership_conflicts_total{kind="SecurityPolicyRule",reason="OlderOwner"}`, 1},
		{`cloudarmor_claims_refused_total{kind="SecurityPolicy"}`, 1},
		{`cloudarmor_claims_refused_total{kind="SecurityPolicyRule"}`, 1},
	} {
		if got := sc.value(c.series); got < c.min {
			t.Errorf("%s = %g, want at least %g", c.series, got, c.min)
		}
	}
	// The emulator keeps every operation RUNNING for opLatency, so no
	// operation can be seen DONE sooner.
	if n := sc.value(`cloudarmor_gcp_operation_wait_seconds_bucket{le="0.1",method="Insert"}`); n != 0 {
		t.Errorf("%g Insert operations timed under 0.1 s, but each ran for %s", n, opLatency)
	}
	if hits := sc.value("cloudarmor_gcp_snapshot_hits_total") + sc.value("cloudarmor_gcp_snapshot_shared_total"); hits == 0 {
		t.Error("no policy read was served by the snapshot cache, though several rule objects share a policy")
	}
	t.Logf("metric families exposed:\n%s", sc.families())

	// Once nothing is managed the provider goes idle, and the counts are
	// final: they must agree exactly, operations and queue included.
	for _, o := range []client.Object{duplicate, outsider, broken, claimed, added} {
		s.delete(t, o)
		s.waitGone(t, o)
	}
	for _, o := range []client.Object{global, regional} {
		s.delete(t, o)
		s.waitGone(t, o)
	}
	for path := range s.emu.Snapshot() {
		if strings.HasPrefix(path, "projects/"+s.project+"/") && strings.Contains(path, "/m-") {
			t.Errorf("%s is still in GCP after its object was deleted", path)
		}
	}
	s.waitIdle(t)
	if err := s.agree(t, rec, true); err != nil {
		t.Error(err)
	}
	final := s.scrape(t)
	t.Logf("GCP calls by method and code: %v", final.calls())
	t.Logf("metric families exposed at the end:\n%s", final.families())
}

// inNamespace moves a managed resource from armor's namespace to ns, using
// ns's ProviderConfig "recorded".
func inNamespace[T interface {
	client.Object
	SetProviderConfigReference(*xpv2.ProviderConfigReference)
}](ns string, o T) T {
	o.SetNamespace(ns)
	o.SetProviderConfigReference(&xpv2.ProviderConfigReference{Kind: pcv1beta1.ProviderConfigKind, Name: "recorded"})
	return o
}

// recordedConfig creates namespace ns (unless it is the test's own) with a
// token Secret and a ProviderConfig "recorded" whose endpoint is endpoint.
func (s *suite) recordedConfig(t *testing.T, ns, endpoint string) {
	t.Helper()
	if ns != s.ns {
		s.namespace(t, ns)
	}
	s.create(t,
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "token"}, StringData: map[string]string{"token": exampleToken}},
		&pcv1beta1.ProviderConfig{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "recorded"}, Spec: pcv1beta1.ProviderConfigSpec{
			ProjectID: s.project,
			Endpoint:  armor.Ptr(endpoint),
			Credentials: pcv1beta1.ProviderCredentials{Source: pcv1beta1.CredentialsSourceAccessToken,
				SecretRef: &xpv2.LocalSecretKeySelector{LocalSecretReference: xpv2.LocalSecretReference{Name: "token"}, Key: "token"}},
		}})
}

// waitGCPRulesQuietly is waitGCPRules without an API call: the emulator's
// counters must hold only the provider's calls.
func (s *suite) waitGCPRulesQuietly(t *testing.T, project, region, name string, want []string) {
	t.Helper()
	s.eventually(t, waitFor, "GCP rules of "+name, func() error {
		p, ok := s.emu.Snapshot()[policyPath(project, region, name)]
		if !ok {
			return fmt.Errorf("no policy %s", name)
		}
		b, err := json.Marshal(p)
		if err != nil {
			return err
		}
		var sp struct {
			Rules []struct {
				Priority int64
				Action   string
				Match    *struct {
					Config *struct{ SrcIpRanges []string }
				}
			}
		}
		if err := json.Unmarshal(b, &sp); err != nil {
			return err
		}
		var got []string
		for _, r := range sp.Rules {
			var ranges []string
			if r.Match != nil && r.Match.Config != nil {
				ranges = r.Match.Config.SrcIpRanges
			}
			got = append(got, fmt.Sprintf("%d:%s:%s", r.Priority, r.Action, strings.Join(ranges, ",")))
		}
		sort.Slice(got, func(i, j int) bool { return rulePriority(got[i]) < rulePriority(got[j]) })
		if diff := cmp.Diff(want, got); diff != "" {
			return fmt.Errorf("-want, +got:\n%s", diff)
		}
		return nil
	})
}

func rulePriority(s string) int64 {
	p, _ := strconv.ParseInt(s[:strings.IndexByte(s, ':')], 10, 64)
	return p
}

// waitIdle waits until the provider has made no GCP call for longer than a
// poll interval.
func (s *suite) waitIdle(t *testing.T) {
	t.Helper()
	const quiet = 2 * (poll + pollJitter)
	last, since := s.scrape(t).calls(), time.Now()
	s.eventually(t, waitFor, "the provider to make no GCP call for "+quiet.String(), func() error {
		now := s.scrape(t).calls()
		if !cmp.Equal(last, now) {
			last, since = now, time.Now()
		}
		if idle := time.Since(since); idle < quiet {
			return fmt.Errorf("quiet for %s", idle.Round(time.Second))
		}
		return nil
	})
}

// agree compares the provider's counters with the proxy's and the
// emulator's. The provider counts a call when its response arrives, the
// proxy once it has sent it and the emulator when the request arrives: a
// call in flight makes them differ, so this is retried until they agree.
// idle adds what holds only once no write is in progress: every accepted
// write's operation counted, and every write's turn in the queue.
func (s *suite) agree(t *testing.T, rec *callRecorder, idle bool) error {
	t.Helper()
	before := s.scrape(t)
	proxied := rec.counts()
	emu, err := emulatorStats(s.emu.URL())
	if err != nil {
		return err
	}
	after := s.scrape(t)
	calls := after.calls()
	if !cmp.Equal(before.calls(), calls) {
		return fmt.Errorf("calls were made while reading the counters")
	}
	if diff := cmp.Diff(proxied, calls); diff != "" {
		return fmt.Errorf("calls by method and code: -proxy, +provider:\n%s", diff)
	}
	byMethod, writes := map[string]int64{}, int64(0)
	for m, codes := range calls {
		for code, n := range codes {
			byMethod[m] += n
			if code == "200" && !reads[m] {
				writes += n
			}
		}
	}
	want, err := emu.byProviderMethod()
	if err != nil {
		return err
	}
	if diff := cmp.Diff(want, byMethod); diff != "" {
		return fmt.Errorf("calls by method: -emulator, +provider:\n%s", diff)
	}
	if writes != emu.Mutations {
		return fmt.Errorf("accepted writes: the emulator counts %d, the provider %d", emu.Mutations, writes)
	}
	if !idle {
		return nil
	}
	queued := 0.0
	for m, codes := range calls {
		if reads[m] {
			continue
		}
		for _, n := range codes {
			queued += float64(n)
		}
		if got, want := after.sum("cloudarmor_gcp_operations_total", "method", m), float64(codes["200"]); got != want {
			return fmt.Errorf("%s: %g operations counted for %g accepted writes", m, got, want)
		}
	}
	if got := after.value("cloudarmor_gcp_write_queue_wait_seconds_count"); got != queued {
		return fmt.Errorf("the write queue timed %g turns for %g writes", got, queued)
	}
	return nil
}

// scrape is one read of the provider's /metrics.
type scrape map[string]*dto.MetricFamily

// scrape reads the provider's /metrics since the test began.
func (s *suite) scrape(t *testing.T) scrape {
	t.Helper()
	return s.scrapeTotal(t).since(s.metricsBase)
}

// scrapeTotal reads the provider's /metrics as its pod serves them.
func (s *suite) scrapeTotal(t *testing.T) scrape {
	t.Helper()
	resp, err := http.Get(s.metricsURL) //nolint:noctx // A test against a loopback port.
	if err != nil {
		t.Fatalf("scrape %s: %v", s.metricsURL, err)
	}
	defer resp.Body.Close() //nolint:errcheck // Read only.
	parser := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parse %s: %v", s.metricsURL, err)
	}
	return mfs
}

// since is sc less base: each counter and each histogram's count, sum and
// buckets less their value in base (a series base lacks counts from zero).
// Gauges are left as they are.
func (sc scrape) since(base scrape) scrape {
	out := scrape{}
	for name, mf := range sc {
		mf = proto.Clone(mf).(*dto.MetricFamily)
		was := map[string]*dto.Metric{}
		for _, m := range base[name].GetMetric() {
			was[renderLabels(labelsOf(m))] = m
		}
		for _, m := range mf.GetMetric() {
			b := was[renderLabels(labelsOf(m))]
			switch {
			case b == nil:
			case m.GetCounter() != nil:
				m.Counter.Value = proto.Float64(m.GetCounter().GetValue() - b.GetCounter().GetValue())
			case m.GetHistogram() != nil:
				h, bh := m.GetHistogram(), b.GetHistogram()
				h.SampleCount = proto.Uint64(h.GetSampleCount() - bh.GetSampleCount())
				h.SampleSum = proto.Float64(h.GetSampleSum() - bh.GetSampleSum())
				for i, bk := range h.GetBucket() {
					if i < len(bh.GetBucket()) && bh.GetBucket()[i].GetUpperBound() == bk.GetUpperBound() {
						bk.CumulativeCount = proto.Uint64(bk.GetCumulativeCount() - bh.GetBucket()[i].GetCumulativeCount())
					}
				}
			}
		}
		out[name] = mf
	}
	return out
}

// calls returns cloudarmor_gcp_calls_total by method and code, zeros left
// out.
func (sc scrape) calls() map[string]map[string]int64 {
	out := map[string]map[string]int64{}
	for _, m := range sc["cloudarmor_gcp_calls_total"].GetMetric() {
		n := int64(m.GetCounter().GetValue())
		if n == 0 {
			continue
		}
		l := labelsOf(m)
		if out[l["method"]] == nil {
			out[l["method"]] = map[string]int64{}
		}
		out[l["method"]][l["code"]] = n
	}
	return out
}

// value returns the sample a series names, such as
// `name{a="x",b="y"}` with labels in name order, a histogram's name_count or
// name_bucket{le="0.1",...}, or 0 when there is none.
func (sc scrape) value(series string) float64 {
	name, want, _ := strings.Cut(series, "{")
	want = strings.TrimSuffix(want, "}")
	suffix := ""
	for _, sfx := range []string{"_count", "_bucket"} {
		if base := strings.TrimSuffix(name, sfx); base != name && sc[base].GetType() == dto.MetricType_HISTOGRAM {
			name, suffix = base, sfx
		}
	}
	for _, m := range sc[name].GetMetric() {
		h := m.GetHistogram()
		switch suffix {
		case "_count":
			if renderLabels(labelsOf(m)) == want {
				return float64(h.GetSampleCount())
			}
		case "_bucket":
			for _, b := range h.GetBucket() {
				l := labelsOf(m)
				l["le"] = strconv.FormatFloat(b.GetUpperBound(), 'g', -1, 64)
				if renderLabels(l) == want {
					return float64(b.GetCumulativeCount())
				}
			}
		default:
			if renderLabels(labelsOf(m)) == want {
				return m.GetCounter().GetValue() + m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// sum adds the counter samples of name whose label is value.
func (sc scrape) sum(name, label, value string) float64 {
	total := 0.0
	for _, m := range sc[name].GetMetric() {
		if labelsOf(m)[label] == value {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// families lists the metric families, one a line: name, type, label names.
func (sc scrape) families() string {
	var lines []string
	for name, mf := range sc {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = true
			}
		}
		var ls []string
		for l := range labels {
			ls = append(ls, l)
		}
		sort.Strings(ls)
		lines = append(lines, fmt.Sprintf("%s %s {%s}", name, strings.ToLower(mf.GetType().String()), strings.Join(ls, ",")))
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

func labelsOf(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func renderLabels(l map[string]string) string {
	ks := make([]string, 0, len(l))
	for k := range l {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	parts := make([]string, 0, len(ks))
	for _, k := range ks {
		parts = append(parts, k+"="+strconv.Quote(l[k]))
	}
	return strings.Join(parts, ",")
}

// emuStats is the part of GET /_emulator/stats this test reads.
type emuStats struct {
	Methods   map[string]int64 `json:"methods"`
	Mutations int64            `json:"mutations"`
}

func emulatorStats(base string) (emuStats, error) {
	var st emuStats
	resp, err := http.Get(base + "/_emulator/stats") //nolint:noctx // A test against a loopback port.
	if err != nil {
		return st, err
	}
	defer resp.Body.Close() //nolint:errcheck // Read only.
	return st, json.NewDecoder(resp.Body).Decode(&st)
}

// emulatorMethods maps the emulator's method names, less their
// securityPolicies., regionSecurityPolicies., globalOperations. or
// regionOperations. prefix, to the provider's method label.
var emulatorMethods = map[string]string{
	"get": "Get", "insert": "Insert", "patch": "Patch", "delete": "Delete",
	"addRule": "AddRule", "patchRule": "PatchRule", "removeRule": "RemoveRule", "setLabels": "SetLabels",
	"wait": "WaitOperation",
}

// reads are the provider's method labels that start no operation: the
// policy reads, operation waits and the project-wide reads (tier, backend
// and edge services, shared by a project's policies).
var reads = map[string]bool{"Get": true, "WaitOperation": true, "ProjectGet": true,
	"BackendServiceAggregatedList": true, "EdgeServiceAggregatedList": true}

// projectWide maps the emulator's names of the project-wide calls to the
// provider's method labels.
var projectWide = map[string]string{
	"projects.get": "ProjectGet", "projects.setCloudArmorTier": "SetCloudArmorTier",
	"backendServices.aggregatedList":             "BackendServiceAggregatedList",
	"networkEdgeSecurityServices.aggregatedList": "EdgeServiceAggregatedList",
}

// byProviderMethod sums the emulator's counts, global and regional, by the
// provider's method label. A method the provider has no label for is an
// error: the provider made a call its metrics do not show.
func (st emuStats) byProviderMethod() (map[string]int64, error) {
	out := map[string]int64{}
	for name, n := range st.Methods {
		if m, ok := projectWide[name]; ok {
			out[m] += n
			continue
		}
		service, method, _ := strings.Cut(name, ".")
		isOp := strings.HasSuffix(service, "Operations")
		m, ok := emulatorMethods[method]
		if !ok || isOp != (m == "WaitOperation") {
			return nil, fmt.Errorf("the emulator served %d %s calls, which the provider's metrics have no method for", n, name)
		}
		out[m] += n
	}
	return out, nil
}

// A callRecorder is a reverse proxy in front of the emulator that counts
// the calls it passed on by the provider's method label and the HTTP status
// the emulator answered.
type callRecorder struct {
	// endpoint is the proxy as the provider's pod reaches it, for a
	// ProviderConfig's spec.endpoint.
	endpoint string
	srv      *httptest.Server
	proxy    *httputil.ReverseProxy

	mu    sync.Mutex
	calls map[string]map[string]int64
}

func newCallRecorder(t *testing.T, emulatorURL string) *callRecorder {
	t.Helper()
	target, err := url.Parse(emulatorURL)
	if err != nil {
		t.Fatal(err)
	}
	r := &callRecorder{proxy: httputil.NewSingleHostReverseProxy(target), calls: map[string]map[string]int64{}}
	r.srv = httptest.NewServer(r)
	t.Cleanup(r.srv.Close)
	return r
}

// statusWriter remembers the status written through it.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(status int) {
	w.status = status
	w.ResponseWriter.WriteHeader(status)
}

func (r *callRecorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
	r.proxy.ServeHTTP(sw, req)
	m := methodOf(req)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.calls[m] == nil {
		r.calls[m] = map[string]int64{}
	}
	r.calls[m][strconv.Itoa(sw.status)]++
}

func (r *callRecorder) counts() map[string]map[string]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]map[string]int64, len(r.calls))
	for m, codes := range r.calls {
		out[m] = make(map[string]int64, len(codes))
		for c, n := range codes {
			out[m][c] = n
		}
	}
	return out
}

var (
	policyCall = regexp.MustCompile(`^/compute/v1/projects/[^/]+/(?:global|regions/[^/]+)/securityPolicies(/[^/]+)?(?:/(addRule|patchRule|removeRule|setLabels))?$`)
	waitCall   = regexp.MustCompile(`^/compute/v1/projects/[^/]+/(?:global|regions/[^/]+)/operations/[^/]+/wait$`)
	// Project-wide reads: the tier and the aggregated lists of backend and
	// edge security services.
	projectCall = regexp.MustCompile(`^/compute/v1/projects/[^/]+(/aggregated/(backendServices|networkEdgeSecurityServices))?$`)
)

// methodOf names a request by the provider's method label; anything else is
// named by its HTTP method and path, which no provider series will match.
func methodOf(req *http.Request) string {
	if waitCall.MatchString(req.URL.Path) && req.Method == http.MethodPost {
		return "WaitOperation"
	}
	if m := projectCall.FindStringSubmatch(req.URL.Path); m != nil && req.Method == http.MethodGet {
		return map[string]string{"": "ProjectGet", "backendServices": "BackendServiceAggregatedList",
			"networkEdgeSecurityServices": "EdgeServiceAggregatedList"}[m[2]]
	}
	if m := policyCall.FindStringSubmatch(req.URL.Path); m != nil {
		named := m[1] != ""
		switch {
		case m[2] != "" && named && req.Method == http.MethodPost:
			return strings.ToUpper(m[2][:1]) + m[2][1:]
		case m[2] == "" && named && req.Method == http.MethodGet:
			return "Get"
		case m[2] == "" && named && req.Method == http.MethodPatch:
			return "Patch"
		case m[2] == "" && named && req.Method == http.MethodDelete:
			return "Delete"
		case m[2] == "" && !named && req.Method == http.MethodPost:
			return "Insert"
		}
	}
	return req.Method + " " + req.URL.Path
}
