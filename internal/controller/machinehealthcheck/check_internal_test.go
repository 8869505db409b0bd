package machinehealthcheck

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The node startup timeout counts from the start of the Machine's create:
// a Machine waiting in its class's create queue (CreateQueued True) is not
// late for a Node, and one whose turn came counts from then.
func TestNodeStartupTimeoutCountsFromTheCreateStart(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	checks := &v1alpha1.MachineHealthCheckChecks{NodeStartupTimeout: &metav1.Duration{Duration: 10 * time.Minute}}
	machine := func(queued metav1.ConditionStatus, since time.Time) *v1alpha1.Machine {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))}}
		if queued != "" {
			m.Status.Conditions = []metav1.Condition{{
				Type: v1alpha1.CreateQueuedCondition, Status: queued, Reason: "Queued", LastTransitionTime: metav1.NewTime(since),
			}}
		}
		return m
	}
	for _, tc := range []struct {
		name      string
		m         *v1alpha1.Machine
		healthy   bool
		recheckIn time.Duration
	}{
		{"never queued, created an hour ago", machine("", time.Time{}), false, 0},
		{"queued for an hour", machine(metav1.ConditionTrue, now.Add(-time.Hour)), true, 0},
		{"its create started 4 minutes ago", machine(metav1.ConditionFalse, now.Add(-4*time.Minute)), true, 6 * time.Minute},
		{"its create started 11 minutes ago", machine(metav1.ConditionFalse, now.Add(-11*time.Minute)), false, 0},
	} {
		v := judge(checks, tc.m, nil, now)
		if v.healthy != tc.healthy || v.recheckIn != tc.recheckIn {
			t.Errorf("%s: healthy %v (%s: %s), recheck in %s; want healthy %v, recheck in %s",
				tc.name, v.healthy, v.reason, v.message, v.recheckIn, tc.healthy, tc.recheckIn)
		}
	}
}

// A listed condition holding its status within its timeout makes the
// Machine failing: still passing, but not counted healthy (triggerIf).
// A Machine waiting for its first Node is not failing.
func TestAConditionWithinItsTimeoutIsFailing(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	checks := &v1alpha1.MachineHealthCheckChecks{
		NodeStartupTimeout: &metav1.Duration{Duration: 10 * time.Minute},
		UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
			{Type: "Ready", Status: "False", Timeout: metav1.Duration{Duration: 5 * time.Second}},
			{Type: "DiskPressure", Status: "True", Timeout: metav1.Duration{Duration: time.Minute}},
		},
	}
	running := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-time.Hour))},
		Status:     v1alpha1.MachineStatus{NodeRef: &v1alpha1.NodeReference{Name: "n"}},
	}
	node := func(conds ...corev1.NodeCondition) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}, Status: corev1.NodeStatus{Conditions: conds}}
	}
	cond := func(t corev1.NodeConditionType, s corev1.ConditionStatus, ago time.Duration) corev1.NodeCondition {
		return corev1.NodeCondition{Type: t, Status: s, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
	}
	starting := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-time.Minute))}}
	for _, tc := range []struct {
		name             string
		m                *v1alpha1.Machine
		node             *corev1.Node
		healthy, failing bool
	}{
		{"Ready", running, node(cond("Ready", "True", time.Hour)), true, false},
		{"NotReady for 2s of 5s", running, node(cond("Ready", "False", 2*time.Second)), true, true},
		{"NotReady for 6s of 5s", running, node(cond("Ready", "False", 6*time.Second)), false, false},
		{"NotReady past its timeout, DiskPressure within", running,
			node(cond("Ready", "False", 6*time.Second), cond("DiskPressure", "True", time.Second)), false, false},
		{"DiskPressure within its timeout, NotReady past", running,
			node(cond("DiskPressure", "True", time.Second), cond("Ready", "False", 6*time.Second)), false, false},
		{"waiting for its first Node", starting, nil, true, false},
	} {
		v := judge(checks, tc.m, tc.node, now)
		if v.healthy != tc.healthy || v.failing != tc.failing {
			t.Errorf("%s: healthy %v, failing %v (%s); want healthy %v, failing %v", tc.name, v.healthy, v.failing, v.message, tc.healthy, tc.failing)
		}
	}
}
