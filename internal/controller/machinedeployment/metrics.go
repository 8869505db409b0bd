package machinedeployment

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The rollout gauges, one series per MachineDeployment, read from its
// status (what `kubectl get machinedeployments` shows): docs/metrics.md.
var (
	rolloutLabels   = []string{"namespace", "deployment"}
	specReplicas    = prometheus.NewDesc("millwright_machinedeployment_spec_replicas", "Machines a MachineDeployment wants (spec.replicas).", rolloutLabels, nil)
	statusReplicas  = prometheus.NewDesc("millwright_machinedeployment_replicas", "Machines of all a MachineDeployment's MachineSets (status.replicas).", rolloutLabels, nil)
	updatedReplicas = prometheus.NewDesc("millwright_machinedeployment_updated_replicas", "Machines made from a MachineDeployment's current template (status.updatedReplicas).", rolloutLabels, nil)
	availReplicas   = prometheus.NewDesc("millwright_machinedeployment_available_replicas", "Machines of a MachineDeployment Running for at least minReadySeconds (status.availableReplicas).", rolloutLabels, nil)
	frozen          = prometheus.NewDesc("millwright_machinedeployment_frozen", "1 while the safety controller freezes a MachineDeployment's scale-up (its Frozen condition is True), else 0.", rolloutLabels, nil)
)

// rolloutCollector reads MachineDeployments from the cache at scrape
// time, so the gauges are always exact, cost nothing between scrapes and
// vanish with their deployment.
type rolloutCollector struct{ reader client.Reader }

// RegisterMetrics registers the rollout gauges, read from reader.
func RegisterMetrics(reader client.Reader) error {
	return metrics.Registry.Register(rolloutCollector{reader: reader})
}

// Collectors returns this package's collectors, the rollout gauges' with
// reader, for the metrics reference (hack/metricsdoc) to describe.
func Collectors(reader client.Reader) []prometheus.Collector {
	return []prometheus.Collector{rolloutCollector{reader: reader}}
}

func (c rolloutCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{specReplicas, statusReplicas, updatedReplicas, availReplicas, frozen} {
		ch <- d
	}
}

func (c rolloutCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	list := &v1alpha1.MachineDeploymentList{}
	if err := c.reader.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil { // read only: no copies
		return
	}
	gauge := func(d *prometheus.Desc, v int32, md *v1alpha1.MachineDeployment) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), md.Namespace, md.Name)
	}
	for i := range list.Items {
		md := &list.Items[i]
		gauge(specReplicas, md.Spec.Replicas, md)
		gauge(statusReplicas, md.Status.Replicas, md)
		gauge(updatedReplicas, md.Status.UpdatedReplicas, md)
		gauge(availReplicas, md.Status.AvailableReplicas, md)
		var f int32
		if meta.IsStatusConditionTrue(md.Status.Conditions, v1alpha1.FrozenCondition) {
			f = 1
		}
		gauge(frozen, f, md)
	}
}
