package machine

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	machinesDesc = prometheus.NewDesc("millwright_machines",
		"Machines by namespace, phase (Unknown and Failed included) and MachineDeployment (empty for a Machine of none).",
		[]string{"namespace", "phase", "deployment"}, nil)
	preservedDesc = prometheus.NewDesc("millwright_machines_preserved",
		"Machines preserved (condition Preserved True) by namespace and reason (docs/preservation.md).", []string{"namespace", "reason"}, nil)
)

func init() {
	metrics.Registry.MustRegister(driverCallSeconds, createToRunningSeconds, drainSeconds, inPlaceSeconds)
}

// Collectors returns this package's collectors, the phase gauge's with
// reader, for the metrics reference (hack/metricsdoc) to describe.
func Collectors(reader client.Reader) []prometheus.Collector {
	return []prometheus.Collector{driverCallSeconds, createToRunningSeconds, drainSeconds, inPlaceSeconds, phaseCollector{reader: reader}}
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

// phaseCollector counts Machines by phase from the cache at scrape time,
// so the gauge is always exact and costs nothing between scrapes.
type phaseCollector struct{ reader client.Reader }

// RegisterPhaseMetrics registers the millwright_machines gauge, read from reader.
func RegisterPhaseMetrics(reader client.Reader) error {
	return metrics.Registry.Register(phaseCollector{reader: reader})
}

func (c phaseCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- machinesDesc
	ch <- preservedDesc
}

func (c phaseCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &v1alpha1.MachineList{}
	if err := c.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil { // counted only: no copies
		return
	}
	type key struct{ ns, phase, deployment string }
	type preservedKey struct{ ns, reason string }
	counts, preserved := map[key]int{}, map[preservedKey]int{}
	for i := range list.Items {
		m := &list.Items[i]
		counts[key{m.Namespace, string(m.Status.Phase), m.Labels[v1alpha1.MachineDeploymentNameLabel]}]++
		if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.PreservedCondition); c != nil && c.Status == metav1.ConditionTrue {
			preserved[preservedKey{m.Namespace, c.Reason}]++
		}
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(machinesDesc, prometheus.GaugeValue, float64(n), k.ns, k.phase, k.deployment)
	}
	for k, n := range preserved {
		ch <- prometheus.MustNewConstMetric(preservedDesc, prometheus.GaugeValue, float64(n), k.ns, k.reason)
	}
}
