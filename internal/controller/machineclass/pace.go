package machineclass

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/statuspace"
)

// countInterval is how often, at most, a class writes a status whose
// only change is its counts (Machines, creates and deletes in flight and
// queued) within their buckets. Only people read those counts (`kubectl
// get machineclasses`, describe): no controller decides from them, the
// machine controller keeps the slots in memory (package classlimit). In
// a rolling update of 1000 Machines they changed with nearly every
// Machine and cost 0.38 writes per replaced Machine (docs/benchmarks.md,
// "Fewer writes per replacement").
const countInterval = 10 * time.Second

// statusPace remembers, per class, when this controller last wrote its
// status. Kept in memory only: a restarted manager writes at once.
type statusPace struct{ statuspace.Memory[types.UID] }

// wait says how long to hold computed, the status this reconcile computed
// for the class uid whose status it read as read: 0 to write it now. Only
// a status whose counts alone changed, none of them to or from zero,
// waits; a count that reaches zero (the end of a scale, of a queue), a
// first Machine, every condition and the generation are written at once.
func (p *statusPace) wait(uid types.UID, read, computed *v1alpha1.MachineClassStatus, now time.Time) time.Duration {
	if !countsOnly(read, computed) {
		return 0
	}
	return p.Left(uid, countInterval, now)
}

// countsOnly reports whether computed differs from read only in its
// counts, each staying zero or staying above zero, and in the InUse
// condition's message, which names the counts.
func countsOnly(read, computed *v1alpha1.MachineClassStatus) bool {
	if equality.Semantic.DeepEqual(read, computed) {
		return false
	}
	c := read.DeepCopy()
	for _, n := range []struct{ read, computed *int32 }{
		{&c.Machines, &computed.Machines},
		{&c.CreatesInFlight, &computed.CreatesInFlight}, {&c.CreatesQueued, &computed.CreatesQueued},
		{&c.DeletesInFlight, &computed.DeletesInFlight}, {&c.DeletesQueued, &computed.DeletesQueued},
	} {
		if (*n.read == 0) != (*n.computed == 0) {
			return false
		}
		*n.read = *n.computed
	}
	was, is := meta.FindStatusCondition(c.Conditions, v1alpha1.InUseCondition), meta.FindStatusCondition(computed.Conditions, v1alpha1.InUseCondition)
	if was != nil && is != nil {
		was.Message = is.Message
	}
	return equality.Semantic.DeepEqual(c, computed)
}
