package machine

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestComputePhase(t *testing.T) {
	cond := func(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason}
	}
	now := metav1.Now()
	cases := []struct {
		name  string
		edit  func(m *v1alpha1.Machine)
		phase v1alpha1.MachinePhase
	}{
		{"new", func(m *v1alpha1.Machine) {}, v1alpha1.PhasePending},
		{"class missing", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.InfrastructureReadyCondition, "False", ReasonClassNotFound)}
		}, v1alpha1.PhasePending},
		{"secret missing", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.BootstrapReadyCondition, "False", ReasonSecretNotFound)}
		}, v1alpha1.PhasePending},
		{"creating", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.BootstrapReadyCondition, "True", ReasonBootstrapDataReady),
				cond(v1alpha1.InfrastructureReadyCondition, "False", ReasonCreating)}
		}, v1alpha1.PhaseProvisioning},
		{"create failed, retrying", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.InfrastructureReadyCondition, "False", ReasonCreateFailed)}
			m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.OperationCreate, State: v1alpha1.OperationFailed}
		}, v1alpha1.PhaseCrashLoopBackOff},
		{"initialize failed, retrying", func(m *v1alpha1.Machine) {
			m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.OperationInitialize, State: v1alpha1.OperationFailed}
		}, v1alpha1.PhaseCrashLoopBackOff},
		{"provisioned", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.InfrastructureReadyCondition, "True", ReasonProvisioned)}
		}, v1alpha1.PhaseProvisioned},
		{"running", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.InfrastructureReadyCondition, "True", ReasonProvisioned),
				cond(v1alpha1.ReadyCondition, "True", ReasonRunning)}
		}, v1alpha1.PhaseRunning},
		{"unknown", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.ReadyCondition, "False", ReasonUnhealthy)}
			m.Status.UnhealthySince = &now
		}, v1alpha1.PhaseUnknown},
		{"failed", func(m *v1alpha1.Machine) {
			m.Status.UnhealthySince = &now
			m.Status.FailureReason = FailureHealthTimeout
		}, v1alpha1.PhaseFailed},
		{"terminating wins over everything", func(m *v1alpha1.Machine) {
			m.Status.FailureReason = FailureHealthTimeout
			m.DeletionTimestamp = &now
		}, v1alpha1.PhaseTerminating},
	}
	for _, tc := range cases {
		m := &v1alpha1.Machine{}
		tc.edit(m)
		if got := ComputePhase(m); got != tc.phase {
			t.Errorf("%s: phase = %s; want %s", tc.name, got, tc.phase)
		}
	}
}

func TestBackoffGrowsAndIsBounded(t *testing.T) {
	base, limit := time.Second, 30*time.Second
	prev := time.Duration(0)
	for failures := int32(1); failures <= 10; failures++ {
		d := backoff(failures, base, limit)
		full := min(base<<(failures-1), limit)
		if d > full || d < full-full/5 {
			t.Fatalf("backoff(%d) = %s; want within [%s, %s]", failures, d, full-full/5, full)
		}
		if full < limit && d < prev/2 {
			t.Fatalf("backoff shrank from %s to %s", prev, d)
		}
		prev = d
	}
}
