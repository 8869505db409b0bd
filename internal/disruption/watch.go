package disruption

import (
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// AllowedChanged passes the MachineDisruptionBudget events that may free
// (or take) a disruption: a creation, a deletion, a new spec or a changed
// status.disruptionsAllowed. The controllers that ask the gate watch
// budgets through it, so a waiting disruption wakes without every recount
// waking them all.
func AllowedChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*v1alpha1.MachineDisruptionBudget)
			n, ok2 := e.ObjectNew.(*v1alpha1.MachineDisruptionBudget)
			return !ok1 || !ok2 || o.Generation != n.Generation || o.Status.DisruptionsAllowed != n.Status.DisruptionsAllowed
		},
	}
}
