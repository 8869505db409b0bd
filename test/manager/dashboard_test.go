package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// A real Prometheus scrapes the manager while a MachineDeployment comes
// up, lives through a driver outage, rolls out a new template and has a
// Machine remediated by a health check and another preserved; then
// every query of the Grafana dashboard (config/grafana/millwright.json,
// as an operator imports it) must return data over the scenario: a panel
// that would show nothing fails the test.
func TestDashboardQueriesReturnData(t *testing.T) {
	ns := namespace(t, "dashboard")
	_, endpoint, simAdmin := startSimAdmin(t, t.TempDir())
	// Orphan passes every second, so that one found orphan is collected
	// (seen on two passes) within the scenario; a soft memory limit, so
	// the memory panel's limit has a value (none is not drawn).
	mgr := startManager(t, "millwright-manager", ns, endpoint, "--machine-safety-orphan-vms-period", "1s", "--memory-limit", "1Gi")
	prom := startPrometheus(t, mgr.metrics)
	began := time.Now()
	// Two scrapes before anything happens: rate() counts an increase
	// only from a sample the counter already had.
	prom.waitSeen(t, began, "count_over_time(up[1h]) >= 2")

	createClass(t, ns)
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-web", Namespace: ns},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: 2,
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": "web"}},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"pool": "web"}},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "sim"}},
			},
		},
	}
	create(t, md)
	waitRolledOut(t, md, 2)

	// A VM no Machine owns: the safety controller finds and deletes it.
	simPost(t, simAdmin, "/orphans", fmt.Sprintf(`{"namespace":%q,"className":"sim"}`, ns))
	testenv.Eventually(t, 60*time.Second, "the orphan VM to be collected", func() (bool, error) {
		body, err := mgr.scrape()
		v, _ := metric(body, "millwright_orphan_vms_collected_total", label("provider", "sim"))
		return v >= 1, err
	})

	// A driver outage while scaling up: the create fails with Unavailable
	// (the driver-errors panel) and the new Machine waits, not Running,
	// until the outage is over; it lasts until Prometheus has seen that.
	simPost(t, simAdmin, "/outage?on=true", "")
	patchDeployment(t, md, func(d *v1alpha1.MachineDeployment) { d.Spec.Replicas = 3 })
	prom.waitSeen(t, began, fmt.Sprintf(`millwright_machines{namespace=%q, phase!="Running"}`, ns))
	prom.waitSeen(t, began, `millwright_driver_call_duration_seconds_count{code="Unavailable"}`)
	simPost(t, simAdmin, "/outage?on=false", "")
	waitRolledOut(t, md, 3)

	// A new class in the template: every Machine is replaced, each old
	// one drained (a change of labels only would be applied in place).
	create(t, &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sim-b", Namespace: ns},
		Spec:       v1alpha1.MachineClassSpec{Provider: "sim", ProviderSpec: runtime.RawExtension{Raw: []byte(simSpec)}},
	})
	patchDeployment(t, md, func(d *v1alpha1.MachineDeployment) { d.Spec.Template.Spec.Class.Name = "sim-b" })
	waitRolledOut(t, md, 3)

	// A health check remediates one Machine, another is preserved: the
	// health checks and preservation row (healthpanels_test.go).
	healthBegan := time.Now()
	remediateAndPreserve(t, md, simAdmin, mgr)
	t.Logf("health check remediation and preservation took %v", time.Since(healthBegan).Round(time.Millisecond))

	panels := dashboardQueries(t)
	var empty []string
	testenv.Eventually(t, 60*time.Second, "every dashboard query to return data", func() (bool, error) {
		empty = empty[:0]
		for _, p := range panels {
			n, err := prom.points(p.expr(ns), began)
			if err != nil {
				return false, err
			}
			if n == 0 {
				empty = append(empty, fmt.Sprintf("%q: %s", p.panel, p.expr(ns)))
			}
		}
		if len(empty) > 0 {
			return false, fmt.Errorf("%d queries without data:\n%s", len(empty), strings.Join(empty, "\n"))
		}
		return true, nil
	})
	t.Logf("%d dashboard queries returned data", len(panels))
	// The alerts docs/operations.md recommends are valid PromQL on the
	// same Prometheus (they need not fire).
	alerts := documentedAlerts(t)
	for _, expr := range alerts {
		if _, err := prom.points(expr, began); err != nil {
			t.Errorf("docs/operations.md: %v", err)
		}
	}
	t.Logf("%d alerts of docs/operations.md are valid PromQL", len(alerts))
	for _, v := range dashboardVariables(t) {
		values, err := prom.labelValues(v.label, v.metric)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Contains(values, ns) {
			t.Errorf("variable %s (label_values(%s, %s)) offers %v, not the test's namespace %s", v.name, v.metric, v.label, values, ns)
		}
	}
}

// dashboardQuery is one target of one panel of the dashboard.
type dashboardQuery struct{ panel, raw string }

// expr is the query as Grafana sends it: the namespace variable set to ns
// and $__rate_interval to the test's rate window.
func (q dashboardQuery) expr(ns string) string {
	return strings.NewReplacer("$namespace", ns, "$__rate_interval", promRateInterval).Replace(q.raw)
}

// dashboardJSON is the committed dashboard.
func dashboardJSON(t *testing.T) []byte {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "config", "grafana", "millwright.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// alertRow is a row of the alerts table of docs/operations.md: the
// expression is its second column's code span.
var alertRow = regexp.MustCompile("^\\| [^|]+ \\| `((?:[^`])+)`")

// documentedAlerts reads the alert expressions of docs/operations.md.
func documentedAlerts(t *testing.T) []string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "operations.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, alerts, _ := strings.Cut(string(b), "## Alerts worth setting")
	var out []string
	for _, l := range strings.Split(alerts, "\n") {
		if m := alertRow.FindStringSubmatch(l); m != nil {
			out = append(out, strings.ReplaceAll(m[1], `\|`, "|")) // a | escaped for the table
		}
	}
	if len(out) == 0 {
		t.Fatal("docs/operations.md lists no alert")
	}
	return out
}

// dashboardVariable is a query variable of the dashboard:
// label_values(metric, label).
type dashboardVariable struct{ name, metric, label string }

var labelValuesQuery = regexp.MustCompile(`^label_values\((\w+), *(\w+)\)$`)

// dashboardVariables reads the dashboard's query variables; each must be
// a label_values query, the one kind the test knows how to run.
func dashboardVariables(t *testing.T) []dashboardVariable {
	t.Helper()
	var d struct {
		Templating struct {
			List []struct {
				Type, Name string
				Query      any
			}
		}
	}
	if err := json.Unmarshal(dashboardJSON(t), &d); err != nil {
		t.Fatal(err)
	}
	var out []dashboardVariable
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		m := labelValuesQuery.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("variable %s: query %v is not label_values(metric, label)", v.Name, v.Query)
		}
		out = append(out, dashboardVariable{name: v.Name, metric: m[1], label: m[2]})
	}
	if len(out) == 0 {
		t.Fatal("the dashboard has no query variable")
	}
	return out
}

// dashboardQueries reads every panel query from the committed dashboard.
func dashboardQueries(t *testing.T) []dashboardQuery {
	t.Helper()
	b := dashboardJSON(t)
	type panel struct {
		Title   string `json:"title"`
		Targets []struct {
			Expr string `json:"expr"`
		} `json:"targets"`
		Panels []json.RawMessage `json:"panels"` // a collapsed row's
	}
	var d struct {
		Panels []json.RawMessage `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var out []dashboardQuery
	var walk func([]json.RawMessage)
	walk = func(raw []json.RawMessage) {
		for _, r := range raw {
			var p panel
			if err := json.Unmarshal(r, &p); err != nil {
				t.Fatal(err)
			}
			for _, tg := range p.Targets {
				out = append(out, dashboardQuery{panel: p.Title, raw: tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	if len(out) == 0 {
		t.Fatal("the dashboard has no queries")
	}
	return out
}

// waitRolledOut waits until md has replicas Machines, all from its
// current template and available, and none other.
func waitRolledOut(t *testing.T, md *v1alpha1.MachineDeployment, replicas int32) {
	t.Helper()
	got := &v1alpha1.MachineDeployment{}
	testenv.Eventually(t, 2*time.Minute, fmt.Sprintf("%s to have %d updated and available Machines", md.Name, replicas), func() (bool, error) {
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(md), got); err != nil {
			return false, err
		}
		st := got.Status
		if st.ObservedGeneration == got.Generation && st.Replicas == replicas && st.UpdatedReplicas == replicas && st.AvailableReplicas == replicas {
			return true, nil
		}
		return false, fmt.Errorf("generation %d observed %d: replicas %d updated %d available %d",
			got.Generation, st.ObservedGeneration, st.Replicas, st.UpdatedReplicas, st.AvailableReplicas)
	})
}

// patchDeployment changes md with change and writes it back, retrying on
// a conflict with the controller's status writes.
func patchDeployment(t *testing.T, md *v1alpha1.MachineDeployment, change func(*v1alpha1.MachineDeployment)) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "to update "+md.Name, func() (bool, error) {
		got := &v1alpha1.MachineDeployment{}
		if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(md), got); err != nil {
			return false, err
		}
		change(got)
		err := env.Client.Update(context.Background(), got)
		return err == nil, err
	})
}

// simPost posts body (JSON, or nothing) to the sim's admin API.
func simPost(t *testing.T, admin, path, body string) {
	t.Helper()
	resp, err := http.Post("http://"+admin+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("POST %s: %s %s", path, resp.Status, b)
	}
}
