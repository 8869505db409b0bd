package machinefacts_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// Phase, case by case; every reason a contract provider's object is
// refused for (internal/contract) makes a Machine Pending too.
func TestPhase(t *testing.T) {
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
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.InfrastructureReadyCondition, "False", machinefacts.ReasonClassNotFound)}
		}, v1alpha1.PhasePending},
		{"secret missing", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.BootstrapReadyCondition, "False", machinefacts.ReasonSecretNotFound)}
		}, v1alpha1.PhasePending},
		{"creating", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.BootstrapReadyCondition, "True", "BootstrapDataReady"),
				cond(v1alpha1.InfrastructureReadyCondition, "False", machinefacts.ReasonCreating)}
		}, v1alpha1.PhaseProvisioning},
		{"create failed, retrying", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.InfrastructureReadyCondition, "False", "CreateFailed")}
			m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.OperationCreate, State: v1alpha1.OperationFailed}
		}, v1alpha1.PhaseCrashLoopBackOff},
		{"initialize failed, retrying", func(m *v1alpha1.Machine) {
			m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.OperationInitialize, State: v1alpha1.OperationFailed}
		}, v1alpha1.PhaseCrashLoopBackOff},
		{"provisioned", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.InfrastructureReadyCondition, "True", "Provisioned")}
		}, v1alpha1.PhaseProvisioned},
		{"running", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.InfrastructureReadyCondition, "True", "Provisioned"),
				cond(v1alpha1.ReadyCondition, "True", "Running")}
		}, v1alpha1.PhaseRunning},
		{"unknown", func(m *v1alpha1.Machine) {
			m.Status.Conditions = []metav1.Condition{cond(v1alpha1.ReadyCondition, "False", "Unhealthy")}
			m.Status.UnhealthySince = &now
		}, v1alpha1.PhaseUnknown},
		{"failed", func(m *v1alpha1.Machine) {
			m.Status.UnhealthySince = &now
			m.Status.FailureReason = "HealthTimeout"
		}, v1alpha1.PhaseFailed},
		{"terminating wins over everything", func(m *v1alpha1.Machine) {
			m.Status.FailureReason = "HealthTimeout"
			m.DeletionTimestamp = &now
		}, v1alpha1.PhaseTerminating},
	}
	for _, tc := range cases {
		m := &v1alpha1.Machine{}
		tc.edit(m)
		if got := machinefacts.Phase(m); got != tc.phase {
			t.Errorf("%s: phase = %s; want %s", tc.name, got, tc.phase)
		}
	}
	for _, reason := range []string{machinefacts.ReasonContractKindUnknown, machinefacts.ReasonContractLabelMissing,
		machinefacts.ReasonContractObjectNotFound, machinefacts.ReasonContractForbidden, machinefacts.ReasonContractOwnedElsewhere} {
		m := &v1alpha1.Machine{}
		m.Status.Conditions = []metav1.Condition{cond(v1alpha1.InfrastructureReadyCondition, "False", reason)}
		if got := machinefacts.Phase(m); got != v1alpha1.PhasePending {
			t.Errorf("InfrastructureReady False/%s: phase = %s; want Pending", reason, got)
		}
	}
}
