package leaderfence

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

var refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "millwright_leader_fence_refusals_total",
	Help: "VM creates and deletes a replica did not start because its Lease was not renewed within the renew deadline (a replica paused or cut off from the API server), by call (create, delete, orphan-delete).",
}, []string{"call"})

func init() {
	metrics.Registry.MustRegister(Collectors()...)
}

// Collectors are the fence's metrics (for the generated reference,
// docs/metrics.md).
func Collectors() []prometheus.Collector {
	return []prometheus.Collector{refusals}
}
