package machineset

import (
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// updateStatus computes the MachineSet's status once, from its Machines,
// and says when to look again for a Machine about to become available.
func (r *Reconciler) updateStatus(s *scope) reconcile.Result {
	st := &s.ms.Status
	templateLabels := labels.SelectorFromSet(s.ms.Spec.Template.Metadata.Labels)
	var replicas, preserved, fullyLabeled, ready, available int32
	var failed []v1alpha1.MachineSummary
	var nextAvailable time.Duration
	minReady := time.Duration(s.ms.Spec.MinReadySeconds) * time.Second
	for _, m := range s.owned {
		if m.Status.LastOperation.State == v1alpha1.OperationFailed || m.Status.FailureReason != "" {
			failed = append(failed, v1alpha1.MachineSummary{
				Name: m.Name, ProviderID: m.Spec.ProviderID, LastOperation: m.Status.LastOperation, OwnerRef: s.ms.Name,
			})
		}
		if !m.DeletionTimestamp.IsZero() {
			continue
		}
		if machinefacts.Preserved(m) {
			preserved++ // not one of the replicas (docs/preservation.md)
			continue
		}
		if s.movingOut[m.Name] {
			continue // counted by the set it moves to (inplace.go)
		}
		replicas++
		if templateLabels.Matches(labels.Set(m.Labels)) {
			fullyLabeled++
		}
		c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ReadyCondition)
		if c == nil || c.Status != metav1.ConditionTrue || m.Status.FailureReason != "" {
			continue
		}
		ready++
		if left := c.LastTransitionTime.Add(minReady).Sub(s.now); left <= 0 {
			available++
		} else if nextAvailable == 0 || left < nextAvailable {
			nextAvailable = left
		}
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
	sort.Slice(failed, func(i, j int) bool { return failed[i].Name < failed[j].Name })
	st.Replicas, st.FullyLabeledReplicas, st.ReadyReplicas, st.AvailableReplicas = replicas, fullyLabeled, ready, available
	st.PreservedReplicas = preserved
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
