package disruption

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var grants = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "millwright_disruption_grants_total",
	Help: "Voluntary disruptions a MachineDisruptionBudget granted, by namespace, budget and kind (Rollout, ScaleDown, InPlaceUpdate, Remediation, PreservationEnd).",
}, []string{"namespace", "machinedisruptionbudget", "kind"})

var waits = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "millwright_disruption_waits_total",
	Help: "Requests for a voluntary disruption that a MachineDisruptionBudget held back, by namespace (each request of a waiting Machine counts).",
}, []string{"namespace"})

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}

// Collectors are the gate's metrics (for the generated reference,
// docs/metrics.md).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{grants, waits}
}
