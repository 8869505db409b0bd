// Command dashboardgen writes Millwright's Grafana dashboard,
// config/grafana/millwright.json, from the panels in panels.go, with the
// Grafana Foundation SDK. hack/generate.sh runs it; test/api fails when the
// committed file is stale, and test/manager evaluates every query of the
// file against a real Prometheus scraping a running manager
// (docs/metrics.md).
//
// Usage: go run ./hack/dashboardgen [-out FILE]
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"

	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

func main() {
	out := flag.String("out", "config/grafana/millwright.json", "file to write the dashboard to")
	flag.Parse()
	if err := write(*out); err != nil {
		fmt.Fprintln(os.Stderr, "dashboardgen:", err)
		os.Exit(1)
	}
}

func write(path string) error {
	d, err := build()
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(d, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// datasource is the dashboard's Prometheus: the ${datasource} variable,
// so the dashboard imports into any Grafana without editing.
func datasource() common.DataSourceRef {
	return common.DataSourceRef{Type: ptr("prometheus"), Uid: ptr("${datasource}")}
}

// build uses the classic dashboard JSON model, which the SDK marks
// deprecated in favour of dashboardv2: the classic model is what Grafana's
// Import, its provisioning and the Helm charts' dashboard sidecar load in
// every Grafana release, while v2 needs Grafana 12's new dashboard API.
//
//lint:ignore SA1019 the classic model, on purpose (above)
func build() (dashboard.Dashboard, error) {
	//lint:ignore SA1019 the classic model, on purpose (above)
	b := dashboard.NewDashboardBuilder("Millwright").
		Uid("millwright").
		Description("Machines, rollouts, driver calls and the manager's controllers (docs/metrics.md).").
		Tags([]string{"millwright", "kubernetes"}).
		Refresh("30s").
		Time("now-1h", "now").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").Label("Data source").Type("prometheus")).
		WithVariable(dashboard.NewQueryVariableBuilder("namespace").
			Label("Namespace").
			Datasource(datasource()).
			Query(dashboard.StringOrMap{String: ptr("label_values(millwright_machines, namespace)")}).
			Refresh(dashboard.VariableRefreshOnTimeRangeChanged).
			Multi(true).IncludeAll(true).AllValue(".*"))
	for _, r := range rows() {
		b = b.WithRow(dashboard.NewRowBuilder(r.title))
		for _, p := range r.panels {
			b = b.WithPanel(p.builder())
		}
	}
	return b.Build()
}

func ptr[T any](v T) *T { return &v }
