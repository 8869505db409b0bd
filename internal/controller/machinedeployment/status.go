package machinedeployment

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// countStatus computes the counts of a deployment's status from its sets,
// keeping the conditions and collisionCount of st.
func countStatus(st *v1alpha1.MachineDeploymentStatus, md *v1alpha1.MachineDeployment, newSet *v1alpha1.MachineSet, sets []*v1alpha1.MachineSet) {
	st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas, st.PreservedReplicas = 0, 0, 0, 0, 0
	st.FailedMachines = nil
	for _, ms := range sets {
		st.Replicas += ms.Status.Replicas
		st.ReadyReplicas += ms.Status.ReadyReplicas
		st.AvailableReplicas += ms.Status.AvailableReplicas
		st.PreservedReplicas += ms.Status.PreservedReplicas
		st.FailedMachines = append(st.FailedMachines, ms.Status.FailedMachines...)
	}
	if newSet != nil {
		st.UpdatedReplicas = newSet.Status.Replicas
	}
	sort.Slice(st.FailedMachines, func(i, j int) bool { return st.FailedMachines[i].Name < st.FailedMachines[j].Name })
	st.UnavailableReplicas = max(0, md.Spec.Replicas-st.AvailableReplicas)
	st.ObservedGeneration = md.Generation
}

// updateStatus computes the deployment's status once, at the end of the
// reconcile, and says when the progress deadline must be checked.
func (r *Reconciler) updateStatus(s *scope) reconcile.Result {
	st := &s.md.Status
	countStatus(st, s.md, s.newSet, s.sets)
	if s.selector != nil {
		st.Selector = s.selector.String()
	}

	status, reason, msg := availableCondition(st, s.md.Spec.Replicas, s.unavailable)
	s.setCondition(v1alpha1.AvailableCondition, status, reason, msg)

	if s.frozen {
		s.setCondition(v1alpha1.FrozenCondition, metav1.ConditionTrue, reasonFrozen,
			"the safety controller froze scale-up: no MachineSet grows until the frozen label is removed")
	} else {
		meta.RemoveStatusCondition(&st.Conditions, v1alpha1.FrozenCondition)
	}
	s.setBudgetWait()

	in := progressInput{
		Paused: s.md.Spec.Paused, Generation: s.md.Generation, Replicas: s.md.Spec.Replicas,
		Old: *s.readStatus(), CreatedNewSet: s.createdNewSet, Now: s.now,
	}
	if d := s.md.Spec.ProgressDeadlineSeconds; d != nil {
		deadline := time.Duration(*d) * time.Second
		in.Deadline = &deadline
	}
	if s.newSet != nil {
		in.NewSet = s.newSet.Name
	}
	if ip := s.inPlace; ip != nil {
		if ip.TooManyFailed {
			in.Failed = ip.Stopped
		}
		if ip.AwaitingSelection {
			in.Awaiting = fmt.Sprintf("strategy.inPlace.orchestration is Manual and no Machine is selected: label the Machines (or their Nodes) to update %s=true",
				v1alpha1.UpdateSelectedLabel)
		}
	}
	if in.Awaiting == "" {
		in.Awaiting = s.budgetWait
	}
	requeue := updateProgressing(st, in)
	was := meta.FindStatusCondition(s.readStatus().Conditions, v1alpha1.ProgressingCondition)
	if c := meta.FindStatusCondition(st.Conditions, v1alpha1.ProgressingCondition); c != nil && c.Reason == reasonDeadlineExceeded &&
		(was == nil || was.Reason != reasonDeadlineExceeded) {
		s.event(corev1.EventTypeWarning, reasonDeadlineExceeded, c.Message)
	}
	return reconcile.Result{RequeueAfter: requeue}
}
