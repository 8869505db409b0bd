package machinedisruptionbudget

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// countedChanged passes the Machine events that may change a budget's
// count: a creation, a deletion, and an update of what a budget reads of
// a Machine (countedSame). A Machine's other writes (its phase,
// addresses, last operation, Node reference) woke every budget selecting
// it, and each such recount read the whole namespace again: the work of
// one event grew with the fleet (docs/benchmarks.md, issue 35 item 3).
func countedChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*v1alpha1.Machine)
			n, ok2 := e.ObjectNew.(*v1alpha1.Machine)
			return !ok1 || !ok2 || !countedSame(o, n)
		},
	}
}

// countedSame reports whether a budget reads the same of a and b: the
// labels (selection), the annotations (preserve, the in-place target),
// the deletion, the failure, every condition (Ready, the remediations,
// Interrupted, Preserved, DisruptionAllowed and its message, the waiting
// list), the in-place update, and the controller (the owner it counts
// against).
func countedSame(a, b *v1alpha1.Machine) bool {
	return maps.Equal(a.Labels, b.Labels) && maps.Equal(a.Annotations, b.Annotations) &&
		a.DeletionTimestamp.Equal(b.DeletionTimestamp) &&
		a.Status.FailureReason == b.Status.FailureReason &&
		equality.Semantic.DeepEqual(a.Status.Conditions, b.Status.Conditions) &&
		equality.Semantic.DeepEqual(a.Status.InPlaceUpdate, b.Status.InPlaceUpdate) &&
		equality.Semantic.DeepEqual(metav1.GetControllerOfNoCopy(a), metav1.GetControllerOfNoCopy(b))
}
