package safety

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	orphansFound = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "millwright_orphan_vms_found_total",
		Help: "VMs found without a Machine (each pass that sees one counts it), by provider.",
	}, []string{"provider"})
	orphansCollected = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "millwright_orphan_vms_collected_total",
		Help: "Orphan VMs deleted by the safety controller, by provider.",
	}, []string{"provider"})
	frozenGauge = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "millwright_frozen",
		Help: "1 while the manager is frozen because an API server is unreachable, else 0.",
	})
	unmanagedNodes = prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "millwright_unmanaged_nodes",
		Help: "Nodes no Machine owns, older than the creation timeout (annotated machine.millwright.dev/not-managed).",
	})
)

// Collectors returns this package's collectors, for the metrics reference
// (hack/metricsdoc) to describe.
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{orphansFound, orphansCollected, frozenGauge, unmanagedNodes}
}

func init() {
	metrics.Registry.MustRegister(orphansFound, orphansCollected, frozenGauge, unmanagedNodes)
}
