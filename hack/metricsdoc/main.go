// Command metricsdoc writes docs/metrics.md, the reference of every
// metric Millwright's manager registers, from the collectors themselves:
// name, type, labels and help. hack/generate.sh runs it; test/api fails
// when the committed page is stale.
//
// Usage: go run ./hack/metricsdoc [-out FILE]
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment"
	"github.com/millwright-dev/millwright/internal/controller/machinedisruptionbudget"
	"github.com/millwright-dev/millwright/internal/controller/machinehealthcheck"
	"github.com/millwright-dev/millwright/internal/controller/safety"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/leaderfence"
)

func main() {
	out := flag.String("out", "docs/metrics.md", "file to write the reference to")
	flag.Parse()
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "metricsdoc:", err)
		os.Exit(1)
	}
}

// A metric as the reference lists it.
type metric struct {
	name, typ, help string
	labels          []string
}

func write(path string) error {
	scheme := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(scheme); err != nil {
		return err
	}
	// One object of each kind the scrape-time collectors read, so that
	// they emit a sample and tell their type.
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		&v1alpha1.MachineDeployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"}},
	).Build()
	var collectors []prometheus.Collector
	collectors = append(collectors, machine.Collectors(&v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "m"}, Status: v1alpha1.MachineStatus{
		Conditions: []metav1.Condition{{Type: v1alpha1.PreservedCondition, Status: metav1.ConditionTrue, Reason: "Requested"}},
	}})...)
	collectors = append(collectors, machinedeployment.Collectors(reader)...)
	collectors = append(collectors, machinehealthcheck.Collectors()...)
	collectors = append(collectors, machinedisruptionbudget.Collectors()...)
	collectors = append(collectors, disruption.Collectors()...)
	collectors = append(collectors, safety.Collectors()...)
	collectors = append(collectors, leaderfence.Collectors()...)
	var ms []metric
	for _, c := range collectors {
		got, err := describe(c)
		if err != nil {
			return err
		}
		ms = append(ms, got...)
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].name < ms[j].name })
	return os.WriteFile(path, render(ms), 0o644)
}

// describe lists c's metrics: name, help and labels from their Desc, the
// type from a sample c emits or, for a vector with no child yet, from c's
// Go type.
func describe(c prometheus.Collector) ([]metric, error) {
	descs := make(chan *prometheus.Desc, 64)
	c.Describe(descs)
	close(descs)
	samples := make(chan prometheus.Metric, 64)
	c.Collect(samples)
	close(samples)
	types := map[string]string{}
	for s := range samples {
		var m dto.Metric
		if err := s.Write(&m); err != nil {
			return nil, err
		}
		types[s.Desc().String()] = typeOf(&m)
	}
	var out []metric
	for d := range descs {
		m, err := parseDesc(d.String())
		if err != nil {
			return nil, err
		}
		if m.typ = types[d.String()]; m.typ == "" {
			m.typ = goType(c)
		}
		if m.typ == "" {
			return nil, fmt.Errorf("%s: cannot tell its type", m.name)
		}
		out = append(out, m)
	}
	return out, nil
}

func typeOf(m *dto.Metric) string {
	switch {
	case m.Counter != nil:
		return "counter"
	case m.Gauge != nil:
		return "gauge"
	case m.Histogram != nil:
		return "histogram"
	case m.Summary != nil:
		return "summary"
	}
	return ""
}

// goType is the type of a vector, or of a metric without labels. Gauge
// comes before Counter: a Gauge has every method of a Counter.
func goType(c prometheus.Collector) string {
	switch c.(type) {
	case *prometheus.GaugeVec, prometheus.Gauge:
		return "gauge"
	case *prometheus.CounterVec, prometheus.Counter:
		return "counter"
	case *prometheus.HistogramVec, prometheus.Histogram:
		return "histogram" // or a Summary, which has the same methods: none here
	}
	return ""
}

// parseDesc reads the name, help and variable labels from a Desc's
// String, the only way client_golang shows them:
// Desc{fqName: "n", help: "h", constLabels: {}, variableLabels: {a,b}}.
func parseDesc(s string) (metric, error) {
	var m metric
	rest, ok := strings.CutPrefix(s, `Desc{fqName: `)
	q, err := strconv.QuotedPrefix(rest)
	if !ok || err != nil {
		return m, fmt.Errorf("unexpected Desc %s", s)
	}
	m.name, _ = strconv.Unquote(q)
	rest, ok = strings.CutPrefix(rest[len(q):], `, help: `)
	if q, err = strconv.QuotedPrefix(rest); !ok || err != nil {
		return m, fmt.Errorf("unexpected Desc %s", s)
	}
	m.help, _ = strconv.Unquote(q)
	_, labels, ok := strings.Cut(rest[len(q):], `variableLabels: {`)
	if labels, ok2 := strings.CutSuffix(labels, "}}"); ok && ok2 && labels != "" {
		m.labels = strings.Split(labels, ",")
	}
	return m, nil
}

// upstream are the metrics of controller-runtime, client-go and
// client_golang's Go and process collectors the dashboard reads; they
// document themselves in their projects.
var upstream = []metric{
	{name: "controller_runtime_reconcile_total", typ: "counter", labels: []string{"controller", "result"}, help: "Reconciles by controller and result (success, error, requeue, requeue_after)."},
	{name: "controller_runtime_reconcile_errors_total", typ: "counter", labels: []string{"controller"}, help: "Reconciles that returned an error, by controller."},
	{name: "workqueue_depth", typ: "gauge", labels: []string{"controller", "name"}, help: "Objects waiting in a controller's work queue."},
	{name: "rest_client_requests_total", typ: "counter", labels: []string{"code", "method", "host"}, help: "The manager's requests to the API servers by HTTP status code and verb (POST, PUT, PATCH and DELETE are writes)."},
	{name: "leader_election_master_status", typ: "gauge", labels: []string{"name"}, help: "1 while this manager holds the leader Lease."},
	{name: "go_memstats_heap_alloc_bytes", typ: "gauge", help: "Bytes of the heap: live objects and garbage not yet collected."},
	{name: "go_gc_heap_live_bytes", typ: "gauge", help: "Bytes of the heap the last garbage collection found live."},
	{name: "go_gc_gomemlimit_bytes", typ: "gauge", help: "The Go runtime's soft memory limit (--memory-limit; 9223372036854775807 when none is set)."},
	{name: "process_resident_memory_bytes", typ: "gauge", help: "The process's resident memory."},
	{name: "process_cpu_seconds_total", typ: "counter", help: "CPU seconds the process used (user and system)."},
}

func render(ms []metric) []byte {
	var b bytes.Buffer
	b.WriteString(`# Metrics

<!-- Generated by hack/metricsdoc from the collectors the manager
registers: edit their Help in the code and run ` + "`make generate`" + `. -->

millwright-manager serves Prometheus metrics on ` + "`--metrics-bind-address`" + `
([flags](flags/millwright-manager.txt)), at ` + "`/metrics`" + `.
[operations.md](operations.md) says what to watch and alert on.

## Dashboard

config/grafana/millwright.json is a Grafana dashboard of these metrics:
the fleet by phase and MachineDeployment, rollout progress, freezes,
create → Running and drain durations, driver calls and errors by code,
health check remediations and short-circuits, preserved Machines,
orphan VMs, work queues, reconciles, the manager's API writes by verb,
and its memory and CPU.
Import it (Dashboards → New → Import) and pick your Prometheus data
source; the Helm chart can install it for Grafana's dashboard sidecar
(` + "`metrics.grafanaDashboard.enabled`" + `, [helm.md](helm.md)). It is
generated from hack/dashboardgen (Grafana Foundation SDK) by ` + "`make generate`" + `.
test/manager runs a real Prometheus scraping a manager while a
MachineDeployment comes up, lives through a driver outage, rolls out and
has a Machine remediated by a health check and another preserved, and
fails when any of the dashboard's queries returns no data.

## Millwright's own

| Metric | Type | Labels | Help |
| --- | --- | --- | --- |
`)
	table(&b, ms)
	b.WriteString(`
## From controller-runtime, client-go and the Go runtime

The manager also exports controller-runtime's and client-go's metrics,
and the Go runtime's and the process's. Those the dashboard reads:

| Metric | Type | Labels | Help |
| --- | --- | --- | --- |
`)
	table(&b, upstream)
	return b.Bytes()
}

func table(b *bytes.Buffer, ms []metric) {
	for _, m := range ms {
		labels := "—"
		if len(m.labels) > 0 {
			labels = "`" + strings.Join(m.labels, "`, `") + "`"
		}
		fmt.Fprintf(b, "| `%s` | %s | %s | %s |\n", m.name, m.typ, labels, strings.ReplaceAll(m.help, "|", `\|`))
	}
}
