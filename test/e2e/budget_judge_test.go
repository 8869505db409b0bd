package e2e

import (
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The budget's invariant as the 30-minute sim chaos run met it: a Machine
// cordoned by a refused in-place update (a voluntary disruption) is
// preserved, then fails (its VM stopped behind Millwright's back). The
// budget counts it no more (its replacement exists) and lets another
// Machine go; the check must agree. Two Machines deleted at once from
// available is still a violation. No cluster: versions are fed to the
// recorder as its watch would.
func TestVoluntaryCheckCountsNoFailedPreservedMachine(t *testing.T) {
	const ns = "judge"
	rv := 0
	version := func(m *v1alpha1.Machine) *v1alpha1.Machine {
		rv++
		out := m.DeepCopy()
		out.ResourceVersion = strconv.Itoa(rv)
		return out
	}
	ready := func(name string) *v1alpha1.Machine {
		return &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Status: v1alpha1.MachineStatus{Phase: v1alpha1.PhaseRunning, Conditions: []metav1.Condition{
				{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Ready"},
			}},
		}
	}
	deleting := func(m *v1alpha1.Machine) *v1alpha1.Machine {
		now := metav1.Now()
		m.DeletionTimestamp, m.Finalizers = &now, []string{v1alpha1.MachineFinalizer}
		return m
	}

	var seen voluntaryCount
	r := newRecorder(&scenario{t: t, ns: ns}, voluntaryAtMost(1, &seen))
	r.synced = map[string]bool{kindMachine: true, kindNode: true, kindPod: true}
	step := func(what string, m *v1alpha1.Machine, wantViolations int) {
		t.Helper()
		r.apply(kindMachine, watch.Modified, version(m))
		if len(r.violations) != wantViolations {
			t.Fatalf("after %s: violations %q, want %d", what, r.violations, wantViolations)
		}
	}

	a := ready("a")
	a.Annotations = map[string]string{v1alpha1.InPlaceTargetAnnotation: "new"}
	a.Status.InPlaceUpdate = &v1alpha1.InPlaceUpdateStatus{TargetSet: "new", Phase: v1alpha1.InPlaceRefused}
	step("a's in-place update refused (its Node left cordoned)", a, 0)
	a.Annotations[v1alpha1.PreserveAnnotation] = v1alpha1.PreserveNow
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: v1alpha1.PreservedCondition, Status: metav1.ConditionTrue, Reason: v1alpha1.PreservedNowReason})
	step("a preserved", a, 0)
	meta.SetStatusCondition(&a.Status.Conditions, metav1.Condition{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: "NodeNotReady"})
	a.Status.FailureReason = "MachineHealthCheck"
	step("a failed, kept by preservation", a, 0)
	step("b deleted from available", deleting(ready("b")), 0)
	delete(a.Annotations, v1alpha1.PreserveAnnotation)
	meta.RemoveStatusCondition(&a.Status.Conditions, v1alpha1.PreservedCondition)
	step("a's preservation ended (a failure now)", a, 0)
	step("a deleted as failed", deleting(a), 0)
	step("c deleted from available beside b", deleting(ready("c")), 1)
	if seen.max != 2 {
		t.Errorf("most Machines voluntarily disrupted at once: %d, want 2 (b and c)", seen.max)
	}
}
