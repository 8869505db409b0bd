package machinedisruptionbudget

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

var budgetLabels = []string{"namespace", "machinedisruptionbudget"}

var (
	expected = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "millwright_machinedisruptionbudget_expected_machines",
		Help: "Machines a MachineDisruptionBudget selects, not being deleted (the base of a percentage).",
	}, budgetLabels)
	unavailable = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "millwright_machinedisruptionbudget_unavailable_machines",
		Help: "Machines a MachineDisruptionBudget selects that are unavailable, granted disruptions not yet taken effect included.",
	}, budgetLabels)
	allowed = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "millwright_machinedisruptionbudget_disruptions_allowed",
		Help: "Voluntary disruptions a MachineDisruptionBudget allows now.",
	}, budgetLabels)
	waiting = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "millwright_machinedisruptionbudget_waiting_machines",
		Help: "Machines whose voluntary disruption waits for a MachineDisruptionBudget, by the budget selecting them.",
	}, budgetLabels)
)

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}

// Collectors are the budgets' metrics (for the generated reference,
// docs/metrics.md).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{expected, unavailable, allowed, waiting}
}

func exportMetrics(b *v1alpha1.MachineDisruptionBudget) {
	l := prometheus.Labels{"namespace": b.Namespace, "machinedisruptionbudget": b.Name}
	expected.With(l).Set(float64(b.Status.ExpectedMachines))
	unavailable.With(l).Set(float64(b.Status.CurrentUnavailable))
	allowed.With(l).Set(float64(b.Status.DisruptionsAllowed))
	waiting.With(l).Set(float64(len(b.Status.WaitingMachines)))
}

// forgetMetrics drops a deleted budget's series.
func forgetMetrics(namespace, name string) {
	l := prometheus.Labels{"namespace": namespace, "machinedisruptionbudget": name}
	for _, g := range []*prometheus.GaugeVec{expected, unavailable, allowed, waiting} {
		g.Delete(l)
	}
}
