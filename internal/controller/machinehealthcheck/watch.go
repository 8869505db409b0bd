package machinehealthcheck

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// checkedChanged passes the Machine events that may change what a health
// check decides of it: its creation and deletion, and an update of what a
// check reads of a Machine (checkedSame). A Machine's other writes (its
// phase, addresses, last operation) woke every check selecting it, and
// each such reconcile judged every selected Machine again: the work of
// one event grew with the fleet (docs/benchmarks.md, issue 35 item 3).
func checkedChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*v1alpha1.Machine)
			n, ok2 := e.ObjectNew.(*v1alpha1.Machine)
			return !ok1 || !ok2 || !checkedSame(o, n)
		},
	}
}

// checkedSame reports whether a check reads the same of a and b: the
// labels (selection, conflicts), the annotations (skip-remediation,
// paused, preserve, the in-place target), the deletion, the generation
// (the conditions' observedGeneration it writes), the failure, the Node
// reference, every condition (any may be listed among a check's
// unhealthyMachineConditions) and the in-place update.
func checkedSame(a, b *v1alpha1.Machine) bool {
	return maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		a.DeletionTimestamp.Equal(b.DeletionTimestamp) && a.Generation == b.Generation &&
		a.Status.FailureReason == b.Status.FailureReason &&
		equality.Semantic.DeepEqual(a.Status.NodeRef, b.Status.NodeRef) &&
		equality.Semantic.DeepEqual(a.Status.Conditions, b.Status.Conditions) &&
		equality.Semantic.DeepEqual(a.Status.InPlaceUpdate, b.Status.InPlaceUpdate)
}
