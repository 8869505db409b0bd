package machinehealthcheck

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var remediationsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "millwright_machinehealthcheck_remediations_total",
	Help: "Remediations a MachineHealthCheck started, by namespace, health check and mode (owner: the MachineSet replaces the Machine; external: a remediation object was created).",
}, []string{"namespace", "machinehealthcheck", "mode"})

var shortCircuited = prometheus.NewGaugeVec(prometheus.GaugeOpts{
	Name: "millwright_machinehealthcheck_short_circuited",
	Help: "1 while a MachineHealthCheck's triggerIf holds remediation back (too many unhealthy Machines), else 0.",
}, []string{"namespace", "machinehealthcheck"})

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}

// Collectors are the health checks' metrics (for the generated reference,
// docs/metrics.md).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{remediationsStarted, shortCircuited}
}

// exportCounters creates the health check's remediation counter at 0
// for its mode, so that its first remediation is an increase a rate or
// increase() query sees (a series born at 1 is not).
func exportCounters(namespace, name, mode string) {
	remediationsStarted.WithLabelValues(namespace, name, mode)
}

// forgetMetrics drops a deleted health check's series.
func forgetMetrics(namespace, name string) {
	labels := prometheus.Labels{"namespace": namespace, "machinehealthcheck": name}
	remediationsStarted.DeletePartialMatch(labels)
	shortCircuited.DeletePartialMatch(labels)
}
