package docs_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/armorplane/provider-cloudarmor/cluster/rbac"
	"github.com/armorplane/provider-cloudarmor/test/framework/repo"
)

const monitoringDir = "cluster/monitoring"

// seriesName finds the metric names in a PromQL expression: ours and the
// libraries' the provider serves.
var seriesName = regexp.MustCompile(`\b(?:cloudarmor|crossplane|controller_runtime|workqueue|rest_client|certwatcher)_[a-z0-9_]+`)

// metricOf is the metric a series name belongs to: a histogram's _bucket,
// _count and _sum are its own name's.
func metricOf(series string) string {
	for _, suffix := range []string{"_bucket", "_count", "_sum"} {
		if m, ok := strings.CutSuffix(series, suffix); ok {
			return m
		}
	}
	return series
}

// TestMonitoringUsesListedMetrics: every alert and dashboard panel of
// cluster/monitoring queries metrics docs/metrics.md lists (which
// TestMetricsDocListsEveryMetric holds to the code, and the library series
// to a live scrape), so none silently queries a series that does not exist;
// every alert has a severity; the scrape selects the provider's pods by the
// name it is installed under.
func TestMonitoringUsesListedMetrics(t *testing.T) {
	listed := tableWords(t, metricsDoc)
	root := repo.Root()

	var rules struct {
		Spec struct {
			Groups []struct {
				Name  string `json:"name"`
				Rules []struct {
					Alert  string            `json:"alert"`
					Expr   string            `json:"expr"`
					Labels map[string]string `json:"labels"`
				} `json:"rules"`
			} `json:"groups"`
		} `json:"spec"`
	}
	b, err := os.ReadFile(filepath.Join(root, monitoringDir, "prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("prometheusrule.yaml: %v", err)
	}
	exprs := map[string]string{} // where -> expression
	for _, g := range rules.Spec.Groups {
		for _, r := range g.Rules {
			where := "alert " + r.Alert
			exprs[where] = r.Expr
			if r.Labels["severity"] == "" {
				t.Errorf("%s has no severity label", where)
			}
		}
	}

	var dash struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	b, err = os.ReadFile(filepath.Join(root, monitoringDir, "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&dash); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			exprs["panel "+p.Title+" #"+string(rune('A'+i))] = tg.Expr
		}
	}
	if len(exprs) < 15 {
		t.Fatalf("found %d alert and panel queries in %s, want at least 15: is the parsing broken?", len(exprs), monitoringDir)
	}

	var unlisted []string
	used := map[string]bool{}
	for where, e := range exprs {
		names := seriesName.FindAllString(e, -1)
		if len(names) == 0 {
			unlisted = append(unlisted, where+": queries no metric of the provider: "+e)
		}
		for _, n := range names {
			used[metricOf(n)] = true
			if !listed[metricOf(n)] {
				unlisted = append(unlisted, where+": "+metricOf(n))
			}
		}
	}
	slices.Sort(unlisted)
	if diff := cmp.Diff([]string(nil), unlisted); diff != "" {
		t.Errorf("queries of metrics docs/metrics.md does not list (-want +got):\n%s", diff)
	}
	for _, m := range []string{"cloudarmor_addressset_unreadable_since_timestamp_seconds", "cloudarmor_gcp_calls_total", "crossplane_managed_resource_synced"} {
		if !used[m] {
			t.Errorf("nothing in %s queries %s", monitoringDir, m)
		}
	}

	// The scrape selects the pods Crossplane runs for the provider's name.
	b, err = os.ReadFile(filepath.Join(root, monitoringDir, "podmonitoring.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(string(b), "\n---\n")
	if len(docs) != 2 {
		t.Fatalf("podmonitoring.yaml: %d documents, want a PodMonitoring and a PodMonitor", len(docs))
	}
	for _, d := range docs {
		var pm struct {
			Kind string `json:"kind"`
			Spec struct {
				Selector struct {
					MatchLabels map[string]string `json:"matchLabels"`
				} `json:"selector"`
			} `json:"spec"`
		}
		if err := yaml.Unmarshal([]byte(d), &pm); err != nil {
			t.Fatal(err)
		}
		if got := pm.Spec.Selector.MatchLabels["pkg.crossplane.io/provider"]; got != rbac.ProviderName {
			t.Errorf("%s selects pods of provider %q, want %q", pm.Kind, got, rbac.ProviderName)
		}
	}
}
