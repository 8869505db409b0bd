package machine

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// ReasonPaused is the Paused condition's reason while a Machine is paused.
const ReasonPaused = "Paused"

// pausedBy says why the Machine must not be reconciled: its paused
// annotation, or spec.paused on its MachineDeployment; "" when it may.
// Providers honour the same annotation on their objects
// (docs/contract-providers.md), so a person can stop every controller touching a Machine.
func (r *Reconciler) pausedBy(ctx context.Context, m *v1alpha1.Machine) (string, error) {
	if _, ok := m.Annotations[v1alpha1.PausedAnnotation]; ok {
		return "the Machine is annotated " + v1alpha1.PausedAnnotation, nil
	}
	name := m.Labels[v1alpha1.MachineDeploymentNameLabel]
	if name == "" {
		return "", nil
	}
	md := &v1alpha1.MachineDeployment{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: m.Namespace, Name: name}, md); err != nil {
		return "", client.IgnoreNotFound(err)
	}
	if md.Spec.Paused {
		return "MachineDeployment " + name + " is paused (spec.paused)", nil
	}
	return "", nil
}

// pause records the Paused condition and ends the reconcile: nothing else
// changes until the pause is lifted (whose event wakes the Machine).
func (r *Reconciler) pause(ctx context.Context, s *scope, why string) (reconcile.Result, error) {
	if c := s.condition(v1alpha1.PausedCondition); c == nil || c.Status != metav1.ConditionTrue {
		s.log.Info("paused", "why", why)
	}
	s.setCondition(v1alpha1.PausedCondition, metav1.ConditionTrue, ReasonPaused, why)
	return reconcile.Result{}, s.patch(ctx)
}

// unpause drops the Paused condition once the pause is lifted.
func unpause(s *scope) {
	if meta.RemoveStatusCondition(&s.machine.Status.Conditions, v1alpha1.PausedCondition) {
		s.log.Info("resumed")
	}
}

// pauseChanged passes MachineDeployment updates that pause or resume it.
func pauseChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, ok1 := e.ObjectOld.(*v1alpha1.MachineDeployment)
			n, ok2 := e.ObjectNew.(*v1alpha1.MachineDeployment)
			return ok1 && ok2 && o.Spec.Paused != n.Spec.Paused
		},
	}
}
