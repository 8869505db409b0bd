package machine

import (
	"context"
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// phaseCounts keeps the millwright_machines and millwright_machines_preserved
// gauges from the Machine informer's events: a scrape reads counts kept up
// to date as Machines change, where listing every Machine at each scrape
// cost a copy of the whole fleet (at 5000 Machines and one scrape a
// second, 14 % of the manager's allocations).
//
// An event takes back what the Machine's previous version added and adds
// what its new one does. The informer hands each handler a Machine's
// versions in order, the previous one in each update and the last one in
// the deletion (a tombstone's too), so no copy of what each Machine
// counts is kept: at 5000 Machines that map was about 1 MiB of the
// manager's live heap (docs/benchmarks.md).
type phaseCounts struct {
	mu        sync.Mutex
	counts    map[phaseKey]int
	preserved map[preservedKey]int
	synced    func() bool
}

type phaseKey struct{ ns, phase, deployment string }

type preservedKey struct{ ns, reason string }

func newPhaseCounts() *phaseCounts {
	return &phaseCounts{
		counts:    map[phaseKey]int{},
		preserved: map[preservedKey]int{},
		synced:    func() bool { return true },
	}
}

// RegisterPhaseMetrics registers the Machine phase gauges, kept from the
// Machine informer of informers.
func RegisterPhaseMetrics(ctx context.Context, informers cache.Informers) error {
	inf, err := informers.GetInformer(ctx, &v1alpha1.Machine{})
	if err != nil {
		return fmt.Errorf("the Machine informer: %w", err)
	}
	c := newPhaseCounts()
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.change(nil, asMachine(obj)) },
		UpdateFunc: func(old, obj any) { c.change(asMachine(old), asMachine(obj)) },
		DeleteFunc: func(obj any) {
			if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = tomb.Obj
			}
			c.change(asMachine(obj), nil)
		},
	})
	if err != nil {
		return fmt.Errorf("watching Machines for the phase gauges: %w", err)
	}
	c.synced = reg.HasSynced
	return metrics.Registry.Register(c)
}

// asMachine is obj as a Machine, nil when it is none.
func asMachine(obj any) *v1alpha1.Machine {
	m, _ := obj.(*v1alpha1.Machine)
	return m
}

// change counts a Machine as it is now (now; nil once deleted) in place
// of what it was (was; nil when new).
func (c *phaseCounts) change(was, now *v1alpha1.Machine) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if was != nil {
		c.add(was, -1)
	}
	if now != nil {
		c.add(now, 1)
	}
}

// add adds n to the counts m is in, and drops a count that reaches zero.
func (c *phaseCounts) add(m *v1alpha1.Machine, n int) {
	addTo(c.counts, phaseKey{m.Namespace, string(m.Status.Phase), m.Labels[v1alpha1.MachineDeploymentNameLabel]}, n)
	if cond := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.PreservedCondition); cond != nil && cond.Status == metav1.ConditionTrue {
		addTo(c.preserved, preservedKey{m.Namespace, cond.Reason}, n)
	}
}

func addTo[K comparable](counts map[K]int, k K, n int) {
	if counts[k] += n; counts[k] == 0 {
		delete(counts, k)
	}
}

func (c *phaseCounts) Describe(ch chan<- *prometheus.Desc) {
	ch <- machinesDesc
	ch <- preservedDesc
}

// Collect reports the counts once the informer has delivered every Machine
// it listed: before, a partial count would read as Machines gone.
func (c *phaseCounts) Collect(ch chan<- prometheus.Metric) {
	if !c.synced() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, n := range c.counts {
		ch <- prometheus.MustNewConstMetric(machinesDesc, prometheus.GaugeValue, float64(n), k.ns, k.phase, k.deployment)
	}
	for k, n := range c.preserved {
		ch <- prometheus.MustNewConstMetric(preservedDesc, prometheus.GaugeValue, float64(n), k.ns, k.reason)
	}
}
