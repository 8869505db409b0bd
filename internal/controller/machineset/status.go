package machineset

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// updateStatus computes the MachineSet's status once, from its ledger,
// and says when to look again for a Machine about to become available.
func (r *Reconciler) updateStatus(s *scope) reconcile.Result {
	st := &s.ms.Status
	l := s.ledger
	if checkLedger {
		checkRecount(s, l) // after this reconcile's own changes
	}
	nextAvailable := l.mature(s.now)
	replicas, fullyLabeled, ready, available := l.replicas, l.fullyLabeled, l.ready, l.available
	var failed []v1alpha1.MachineSummary
	for _, m := range l.named(l.opFailed) {
		failed = append(failed, v1alpha1.MachineSummary{
			Name: m.Name, ProviderID: m.Spec.ProviderID, LastOperation: m.Status.LastOperation, OwnerRef: s.ms.Name,
		})
	}
	for _, m := range s.movingIn {
		if !countsIn(m) {
			continue
		}
		replicas++
		if movedInReady(s.ms, m) {
			// Moved in a moment from now: minReadySeconds ran while it
			// was Ready in its old set already.
			ready++
			available++
		}
	}
	st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas = replicas, fullyLabeled, ready, available
	st.PreservedReplicas = int32(l.kinds[kindPreserved]) // not replicas (docs/preservation.md)
	st.FailedMachines = failed
	st.Selector = s.selector.String()
	st.ObservedGeneration = s.ms.Generation

	if s.replicaFailure != "" {
		r.setCondition(s, v1alpha1.ReplicaFailureCondition, metav1.ConditionTrue, "MachineOperationFailed", s.replicaFailure)
	} else if meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ReplicaFailureCondition) {
		r.setCondition(s, v1alpha1.ReplicaFailureCondition, metav1.ConditionFalse, "MachineOperationsSucceeded", "the last creates and deletes succeeded")
	}
	r.recordProven(s)
	r.setWaiting(s)
	if s.ms.Labels[v1alpha1.FrozenLabel] != "" {
		r.setCondition(s, v1alpha1.FrozenCondition, metav1.ConditionTrue, "FrozenBySafetyController", "scale-up is frozen: too many Machines exist")
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.FrozenCondition)
	}
	return reconcile.Result{RequeueAfter: nextAvailable}
}

func (r *Reconciler) setCondition(s *scope, t string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&s.ms.Status.Conditions, metav1.Condition{
		Type: t, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: s.ms.Generation, LastTransitionTime: metav1.NewTime(s.now),
	})
}
