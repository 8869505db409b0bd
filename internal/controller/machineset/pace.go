package machineset

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/statuspace"
)

// countInterval is how often, at most, a set writes a status whose only
// change is its replica counts while it moves. In a scale-up of 1000
// Machines the counts change with nearly every Machine: written each
// time, they cost about a quarter of a set status write per Machine, and
// as many deployment status writes, whose counts are the sets' sums
// (docs/rollout.md, "Status counts").
const countInterval = time.Second

// statusPace remembers, per set, when this controller last wrote its
// status. Kept in memory only: a restarted manager writes at once.
type statusPace struct {
	statuspace.Memory[types.NamespacedName]
}

// wait says how long to hold computed, the status this reconcile computed
// for the set key whose status it read as read: 0 to write it now. Only a
// status whose counts alone changed, of a set whose counts do not all
// equal spec.replicas yet, waits; the last count of a scale, every
// condition and every failed Machine are written at once.
func (p *statusPace) wait(key types.NamespacedName, spec int32, read, computed *v1alpha1.MachineSetStatus, now time.Time) time.Duration {
	if settled(spec, computed) || !countsOnly(read, computed) {
		return 0
	}
	return p.Left(key, countInterval, now)
}

// settled reports whether every replica count of st is spec.
func settled(spec int32, st *v1alpha1.MachineSetStatus) bool {
	return st.Replicas == spec && st.FullyLabeledReplicas == spec && st.ReadyReplicas == spec && st.AvailableReplicas == spec
}

// countsOnly reports whether computed differs from read, and only in its
// replica counts.
func countsOnly(read, computed *v1alpha1.MachineSetStatus) bool {
	if equality.Semantic.DeepEqual(read, computed) {
		return false
	}
	c := read.DeepCopy()
	c.Replicas, c.FullyLabeledReplicas = computed.Replicas, computed.FullyLabeledReplicas
	c.ReadyReplicas, c.AvailableReplicas = computed.ReadyReplicas, computed.AvailableReplicas
	return equality.Semantic.DeepEqual(c, computed)
}
