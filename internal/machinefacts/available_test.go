package machinefacts_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// ready is a Running Machine labelled pool=a.
func ready(name string) v1alpha1.Machine {
	return v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"pool": "a"}},
		Status: v1alpha1.MachineStatus{Phase: v1alpha1.PhaseRunning, Conditions: []metav1.Condition{
			{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: "Running"},
		}},
	}
}

func withCondition(m v1alpha1.Machine, t string, s metav1.ConditionStatus) v1alpha1.Machine {
	out := *m.DeepCopy()
	for i := range out.Status.Conditions {
		if out.Status.Conditions[i].Type == t {
			out.Status.Conditions[i].Status = s
			return out
		}
	}
	out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: "Test"})
	return out
}

func inPlace(m v1alpha1.Machine, phase v1alpha1.InPlaceUpdatePhase) v1alpha1.Machine {
	out := *m.DeepCopy()
	out.Status.InPlaceUpdate = &v1alpha1.InPlaceUpdateStatus{TargetSet: "new", Phase: phase}
	return out
}

// targeted annotates the Machine with the in-place target its status names.
func targeted(m v1alpha1.Machine) v1alpha1.Machine {
	out := *m.DeepCopy()
	out.Annotations = map[string]string{v1alpha1.InPlaceTargetAnnotation: "new"}
	return out
}

// TestUnavailable: the one definition, case by case.
func TestUnavailable(t *testing.T) {
	now := metav1.Now()
	deleting := ready("m")
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{v1alpha1.MachineFinalizer}
	failed := ready("m")
	failed.Status.FailureReason = "HealthCheckFailed"
	pending := ready("m")
	pending.Status.Conditions = nil
	for _, tc := range []struct {
		name string
		m    v1alpha1.Machine
		want bool
	}{
		{"Running and Ready", ready("m"), false},
		{"being deleted", deleting, true},
		{"Failed", failed, true},
		{"not yet Ready", pending, true},
		{"Node not Ready", withCondition(ready("m"), v1alpha1.ReadyCondition, metav1.ConditionFalse), true},
		{"interrupted", withCondition(ready("m"), v1alpha1.InterruptedCondition, metav1.ConditionTrue), true},
		{"marked for replacement", withCondition(ready("m"), v1alpha1.OwnerRemediatedCondition, metav1.ConditionFalse), true},
		{"remediated externally", withReason(withCondition(ready("m"), v1alpha1.HealthCheckSucceededCondition, metav1.ConditionFalse), v1alpha1.ExternalRemediationRequestedReason), true},
		{"failing a health check, not yet remediated", withCondition(ready("m"), v1alpha1.HealthCheckSucceededCondition, metav1.ConditionFalse), false},
		{"in-place Draining", inPlace(ready("m"), v1alpha1.InPlaceDraining), true},
		{"in-place Updating", inPlace(ready("m"), v1alpha1.InPlaceUpdating), true},
		{"in-place WaitingForNode", inPlace(ready("m"), v1alpha1.InPlaceWaitingForNode), true},
		{"in-place Succeeded", inPlace(ready("m"), v1alpha1.InPlaceSucceeded), false},
		{"in-place Refused, target cleared", inPlace(ready("m"), v1alpha1.InPlaceRefused), false},
		{"in-place Failed, target cleared", inPlace(ready("m"), v1alpha1.InPlaceFailed), false},
		// Cordoned and drained, Node Ready: it serves nothing.
		{"in-place Refused, target still on it", targeted(inPlace(ready("m"), v1alpha1.InPlaceRefused)), true},
		{"in-place Failed, target still on it", targeted(inPlace(ready("m"), v1alpha1.InPlaceFailed)), true},
		{"in-place Succeeded, target still on it", targeted(inPlace(ready("m"), v1alpha1.InPlaceSucceeded)), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := machinefacts.Unavailable(&tc.m)
			if got != tc.want {
				t.Fatalf("Unavailable = %v (%q), want %v", got, why, tc.want)
			}
			if got && why == "" {
				t.Error("an unavailable Machine without a reason")
			}
		})
	}
}

// withReason sets the reason of the Machine's last condition.
func withReason(m v1alpha1.Machine, reason string) v1alpha1.Machine {
	m.Status.Conditions[len(m.Status.Conditions)-1].Reason = reason
	return m
}

// Available is not Unavailable and Ready for minReady; UntilAvailable
// says how long that is still to wait.
func TestAvailable(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	m := ready("m")
	m.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-10 * time.Second))
	if !machinefacts.Available(&m, 0, now) || !machinefacts.Available(&m, 10*time.Second, now) {
		t.Error("a Machine Ready for 10s is not available with minReady 0 or 10s")
	}
	if machinefacts.Available(&m, time.Minute, now) {
		t.Error("a Machine Ready for 10s is available with minReady 1m")
	}
	if left, ok := machinefacts.UntilAvailable(&m, time.Minute, now); !ok || left != 50*time.Second {
		t.Errorf("UntilAvailable = %v, %v; want 50s, true", left, ok)
	}
	remediated := withCondition(m, v1alpha1.OwnerRemediatedCondition, metav1.ConditionFalse)
	if machinefacts.Available(&remediated, 0, now) {
		t.Error("a Ready Machine marked for replacement is available")
	}
	if _, ok := machinefacts.UntilAvailable(&remediated, 0, now); ok {
		t.Error("UntilAvailable waits for a Machine marked for replacement")
	}
}

// DeleteGroupOf reads the annotations; Compare puts marked Machines first,
// then lower priorities.
func TestDeleteGroup(t *testing.T) {
	of := func(ann map[string]string) machinefacts.DeleteGroup {
		return machinefacts.DeleteGroupOf(&v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Annotations: ann}})
	}
	plain, marked := of(nil), of(map[string]string{v1alpha1.DeleteMachineAnnotation: ""})
	p1, bad := of(map[string]string{v1alpha1.PriorityAnnotation: "1"}), of(map[string]string{v1alpha1.PriorityAnnotation: "high"})
	if plain != bad || plain.Priority != machinefacts.DefaultDeletePriority {
		t.Errorf("plain %+v, unparsable priority %+v; want both the default", plain, bad)
	}
	if marked.Compare(p1) >= 0 || p1.Compare(plain) >= 0 || plain.Compare(plain) != 0 || plain.Compare(marked) <= 0 {
		t.Errorf("order of marked %+v, priority 1 %+v, plain %+v is wrong", marked, p1, plain)
	}
}
