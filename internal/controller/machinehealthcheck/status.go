package machinehealthcheck

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// fillStatus writes what the reconcile found into the health check's
// status, and an Event when the short-circuit starts or ends holding
// remediation back.
func (r *Reconciler) fillStatus(mhc *v1alpha1.MachineHealthCheck, j *judged, unhealthy []*target, reasons map[string]string,
	conflicts []string, b budget, now time.Time) {
	st := &mhc.Status
	st.ExpectedMachines = int32(j.expected)
	st.CurrentHealthy = int32(j.expected - len(unhealthy) - j.failing)
	st.RemediationsAllowed = int32(b.allowed)
	st.ObservedGeneration = mhc.Generation
	st.UnhealthyMachines = nil
	for _, t := range unhealthy {
		st.UnhealthyMachines = append(st.UnhealthyMachines, v1alpha1.UnhealthyMachine{Name: t.machine.Name, Reason: reasons[t.machine.Name]})
	}

	held := 0.0
	if b.heldBack {
		held = 1
	}
	shortCircuited.WithLabelValues(mhc.Namespace, mhc.Name).Set(held)
	wasHeldBack := meta.IsStatusConditionFalse(st.Conditions, v1alpha1.RemediationAllowedCondition)
	if b.heldBack {
		r.setStatusCondition(mhc, v1alpha1.RemediationAllowedCondition, false, ReasonTooManyUnhealthy, b.why, now)
		if !wasHeldBack {
			r.event(mhc, corev1.EventTypeWarning, "RemediationRestricted", b.why)
		}
	} else {
		r.setStatusCondition(mhc, v1alpha1.RemediationAllowedCondition, true, ReasonRemediationAllowed,
			b.counted+": remediation allowed", now)
		if wasHeldBack {
			r.event(mhc, corev1.EventTypeNormal, "RemediationResumed",
				b.counted+": remediation resumes")
		}
	}

	if len(conflicts) > 0 {
		r.setStatusCondition(mhc, v1alpha1.SelectionConflictCondition, true, ReasonSelectionConflict,
			fmt.Sprintf("%d Machine(s) are also selected by another MachineHealthCheck and are judged by none until only one selects them: %s",
				len(conflicts), strings.Join(conflicts, ", ")), now)
	} else {
		r.setStatusCondition(mhc, v1alpha1.SelectionConflictCondition, false, ReasonNoConflict,
			"no selected Machine is selected by another MachineHealthCheck", now)
	}
}

func (r *Reconciler) setStatusCondition(mhc *v1alpha1.MachineHealthCheck, t string, ok bool, reason, message string, now time.Time) {
	status := metav1.ConditionFalse
	if ok {
		status = metav1.ConditionTrue
	}
	setCondition(&mhc.Status.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message}, mhc.Generation, now)
}
