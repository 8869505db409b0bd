package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/variants"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/prometheus"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// A row of panels.
type row struct {
	title  string
	panels []panel
}

// A panel: a stat (one number) or a time series, and its queries. Every
// query must return data on a manager that ran a rollout (test/manager).
type panel struct {
	title, description, unit string
	stat                     bool
	width                    uint32
	queries                  []query
}

type query struct{ expr, legend string }

// ns filters by the dashboard's namespace variable.
const ns = `namespace=~"$namespace"`

func rows() []row {
	return []row{
		{"Fleet", []panel{
			{title: "Machines", stat: true, width: 4, description: "Machines in the selected namespaces.",
				queries: []query{{`sum(millwright_machines{` + ns + `})`, ""}}},
			{title: "Machines not Running", stat: true, width: 4, description: "Machines in any phase but Running: Pending, Provisioning, CrashLoopBackOff, Provisioned, Unknown, Failed, Terminating (docs/machine-phases.md).",
				queries: []query{{`sum(millwright_machines{` + ns + `, phase!="Running"})`, ""}}},
			{title: "Machines by phase", width: 8,
				queries: []query{{`sum by (phase) (millwright_machines{` + ns + `})`, "{{phase}}"}}},
			{title: "Machines by deployment and phase", width: 8, description: "Machines of a MachineDeployment; a Machine of none is not shown.",
				queries: []query{{`sum by (namespace, deployment, phase) (millwright_machines{` + ns + `, deployment!=""})`, "{{namespace}}/{{deployment}} {{phase}}"}}},
		}},
		{"Rollouts", []panel{
			{title: "Rollout progress", width: 16, description: "Per MachineDeployment: wanted (spec.replicas), existing, made from the current template (updated) and available; a finished rollout has all four equal.",
				queries: []query{
					{`millwright_machinedeployment_spec_replicas{` + ns + `}`, "{{namespace}}/{{deployment}} wanted"},
					{`millwright_machinedeployment_replicas{` + ns + `}`, "{{namespace}}/{{deployment}} replicas"},
					{`millwright_machinedeployment_updated_replicas{` + ns + `}`, "{{namespace}}/{{deployment}} updated"},
					{`millwright_machinedeployment_available_replicas{` + ns + `}`, "{{namespace}}/{{deployment}} available"},
				}},
			{title: "Frozen deployments", stat: true, width: 4, description: "MachineDeployments whose scale-up the safety controller froze (too many Machines exist): docs/rollout.md.",
				queries: []query{{`sum(millwright_machinedeployment_frozen{` + ns + `})`, ""}}},
			{title: "Manager frozen", stat: true, width: 4, description: "1 while the manager is frozen because an API server is unreachable: it changes nothing until it is back.",
				queries: []query{{`max(millwright_frozen)`, ""}}},
		}},
		{"Durations", []panel{
			{title: "Create → Running", unit: "s", width: 12, description: "Time from a Machine's creation to its Node being Ready.",
				queries: quantiles("millwright_machine_create_to_running_seconds_bucket")},
			{title: "Drain duration", unit: "s", width: 12, description: "Time a Node's drain took before its Machine's VM was deleted.",
				queries: quantiles("millwright_machine_drain_duration_seconds_bucket")},
		}},
		{"Driver", []panel{
			{title: "Driver calls by method and code", unit: "reqps", width: 8, description: "Calls to the drivers; a code other than OK is an error (docs/driver-errors.md).",
				queries: []query{{`sum by (provider, method, code) (rate(millwright_driver_call_duration_seconds_count[$__rate_interval]))`, "{{provider}} {{method}} {{code}}"}}},
			{title: "Driver errors by code", unit: "reqps", width: 8, description: "Failed driver calls by machine error code (docs/driver-errors.md says what Millwright does on each).",
				queries: []query{{`sum by (provider, code) (rate(millwright_driver_call_duration_seconds_count{code!="OK"}[$__rate_interval]))`, "{{provider}} {{code}}"}}},
			{title: "Driver call latency p95", unit: "s", width: 8,
				queries: []query{{`histogram_quantile(0.95, sum by (le, method) (rate(millwright_driver_call_duration_seconds_bucket[$__rate_interval])))`, "{{method}}"}}},
		}},
		{"Health checks and preservation", []panel{
			{title: "Health check remediations by mode", width: 12, description: "Remediations MachineHealthChecks started, by health check and mode: owner (the MachineSet replaces the Machine) or external (a remediation object was created): docs/health-checks.md.",
				queries: []query{{`sum by (namespace, machinehealthcheck, mode) (increase(millwright_machinehealthcheck_remediations_total{` + ns + `}[$__rate_interval]))`, "{{namespace}}/{{machinehealthcheck}} {{mode}}"}}},
			{title: "Short-circuited health checks", stat: true, width: 4, description: "MachineHealthChecks whose triggerIf holds remediation back because too many of their Machines are unhealthy at once: docs/health-checks.md.",
				queries: []query{{`sum(millwright_machinehealthcheck_short_circuited{` + ns + `})`, ""}}},
			{title: "Preserved Machines by reason", width: 8, description: "Machines kept with their VM and Node (condition Preserved True), by reason: PreserveRequested, PreservedAfterFailure, AutoPreserved (docs/preservation.md).",
				queries: []query{{`sum by (namespace, reason) (millwright_machines_preserved{` + ns + `})`, "{{namespace}} {{reason}}"}}},
		}},
		{"Safety", []panel{
			{title: "Orphan VMs", width: 12, description: "VMs found without a Machine (each pass that sees one counts it) and those the safety controller deleted.",
				queries: []query{
					{`sum by (provider) (increase(millwright_orphan_vms_found_total[$__rate_interval]))`, "{{provider}} found"},
					{`sum by (provider) (increase(millwright_orphan_vms_collected_total[$__rate_interval]))`, "{{provider}} collected"},
				}},
			{title: "Unmanaged Nodes", stat: true, width: 12, description: "Nodes no Machine owns, older than the creation timeout.",
				queries: []query{{`max(millwright_unmanaged_nodes)`, ""}}},
		}},
		{"Manager", []panel{
			{title: "Workqueue depth", width: 8, description: "Objects waiting for a reconcile, by controller.",
				queries: []query{{`sum by (name) (workqueue_depth)`, "{{name}}"}}},
			{title: "Reconciles by controller and result", unit: "ops", width: 8,
				queries: []query{{`sum by (controller, result) (rate(controller_runtime_reconcile_total[$__rate_interval]))`, "{{controller}} {{result}}"}}},
			{title: "API writes by verb", unit: "reqps", width: 8, description: "The manager's writes to the API servers (client-go's requests), by HTTP verb and status code.",
				queries: []query{{`sum by (method, code) (rate(rest_client_requests_total{method=~"POST|PUT|PATCH|DELETE"}[$__rate_interval]))`, "{{method}} {{code}}"}}},
			{title: "Manager memory", unit: "bytes", width: 12, description: "Per manager process: the heap (live objects and garbage not yet collected), the heap its last collection found live, its resident memory, and the soft memory limit (--memory-limit; not drawn when none is set). Without a limit the heap peaks near twice the live heap: docs/operations.md, Memory.",
				queries: []query{
					{managerOnly(`go_memstats_heap_alloc_bytes`), "{{instance}} heap"},
					{managerOnly(`go_gc_heap_live_bytes`), "{{instance}} live heap"},
					{managerOnly(`process_resident_memory_bytes`), "{{instance}} resident"},
					// No limit is math.MaxInt64 bytes, which would flatten the rest.
					{managerOnly(`go_gc_gomemlimit_bytes < 1e18`), "{{instance}} soft limit"},
				}},
			{title: "Manager CPU", unit: "short", width: 12, description: "CPU cores each manager process uses.",
				queries: []query{{managerOnly(`rate(process_cpu_seconds_total[$__rate_interval])`), "{{instance}}"}}},
		}},
	}
}

// managerOnly keeps the series of expr that come from a manager: the Go
// runtime's and the process's metrics have the same names in every Go
// program a Prometheus scrapes, millwright_frozen only in the manager.
func managerOnly(expr string) string {
	return expr + ` and on (instance) millwright_frozen`
}

// quantiles are the p50 and p95 of a histogram.
func quantiles(bucket string) []query {
	q := func(p string) query {
		return query{`histogram_quantile(` + p + `, sum by (le) (rate(` + bucket + `[$__rate_interval])))`, "p" + p[2:]}
	}
	return []query{q("0.50"), q("0.95")}
}

func (p panel) targets() []cog.Builder[variants.Dataquery] {
	var ts []cog.Builder[variants.Dataquery]
	for i, q := range p.queries {
		t := prometheus.NewDataqueryBuilder().RefId(string(rune('A' + i))).Expr(q.expr).Datasource(datasource())
		if q.legend != "" {
			t = t.LegendFormat(q.legend)
		}
		ts = append(ts, t)
	}
	return ts
}

func (p panel) builder() cog.Builder[dashboard.Panel] {
	if p.stat {
		b := stat.NewPanelBuilder().Title(p.title).Datasource(datasource()).Span(p.width).Height(6).Targets(p.targets())
		if p.description != "" {
			b = b.Description(p.description)
		}
		return b
	}
	b := timeseries.NewPanelBuilder().Title(p.title).Datasource(datasource()).Span(p.width).Height(8).Targets(p.targets()).
		Legend(common.NewVizLegendOptionsBuilder().DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom).ShowLegend(true))
	if p.unit != "" {
		b = b.Unit(p.unit)
	}
	if p.description != "" {
		b = b.Description(p.description)
	}
	return b
}
