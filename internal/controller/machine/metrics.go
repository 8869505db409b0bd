package machine

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

var (
	driverCallSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "millwright_driver_call_duration_seconds",
		Help:    "Duration of driver calls by provider, method and machine error code.",
		Buckets: prometheus.ExponentialBuckets(0.001, 4, 10),
	}, []string{"provider", "method", "code"})
	createToRunningSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "millwright_machine_create_to_running_seconds",
		Help:    "Time from a Machine's creation to its Node being Ready.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})
	drainSeconds = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "millwright_machine_drain_duration_seconds",
		Help:    "Time a Node's drain took.",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	})
	inPlaceSeconds = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "millwright_machine_inplace_update_duration_seconds",
		Help:    "Time an in-place update took from its start (status.inPlaceUpdate.startedAt) to its end, by result: Succeeded, Failed or Refused (docs/in-place-updates.md).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	}, []string{"result"})
	providerEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "millwright_provider_events_total",
		Help: "Events drivers announced about VMs (ReceiveEvents, docs/interruptions.md), by provider, kind (Interruption, RebalanceRecommendation, ...) and outcome: recorded on the Machine, or unmatched (no Machine has the VM; dropped).",
	}, []string{"provider", "kind", "outcome"})
	machinesDesc = prometheus.NewDesc("millwright_machines",
		"Machines by namespace, phase (Unknown and Failed included) and MachineDeployment (empty for a Machine of none).",
		[]string{"namespace", "phase", "deployment"}, nil)
	preservedDesc = prometheus.NewDesc("millwright_machines_preserved",
		"Machines preserved (condition Preserved True) by namespace and reason (docs/preservation.md).", []string{"namespace", "reason"}, nil)
)

func init() {
	metrics.Registry.MustRegister(driverCallSeconds, createToRunningSeconds, drainSeconds, inPlaceSeconds, providerEvents)
}

// Collectors returns this package's collectors, the phase gauges' counting
// seed, for the metrics reference (hack/metricsdoc) to describe.
func Collectors(seed ...*v1alpha1.Machine) []prometheus.Collector {
	counts := newPhaseCounts()
	for _, m := range seed {
		counts.change(nil, m)
	}
	return []prometheus.Collector{driverCallSeconds, createToRunningSeconds, drainSeconds, inPlaceSeconds, providerEvents, counts}
}

func observeDriverCall(provider string, method driver.Method, code driver.Code, d time.Duration) {
	driverCallSeconds.WithLabelValues(provider, string(method), code.String()).Observe(d.Seconds())
}

func observePhaseChange(m *v1alpha1.Machine, from, to v1alpha1.MachinePhase, now time.Time) {
	if to == v1alpha1.PhaseRunning && from != v1alpha1.PhaseUnknown {
		createToRunningSeconds.Observe(now.Sub(m.CreationTimestamp.Time).Seconds())
	}
}

func observeDrain(d time.Duration) { drainSeconds.Observe(d.Seconds()) }

func observeInPlaceUpdate(result v1alpha1.InPlaceUpdatePhase, d time.Duration) {
	inPlaceSeconds.WithLabelValues(string(result)).Observe(d.Seconds())
}
