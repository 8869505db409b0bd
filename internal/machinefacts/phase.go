package machinefacts

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Reasons of a Machine's InfrastructureReady and BootstrapReady conditions
// that its phase reads. The machine controller and internal/contract write
// them under these names (their Reason constants are these).
const (
	// Prerequisites missing: the Machine is Pending, not Provisioning.
	ReasonClassNotFound = "ClassNotFound"
	// ReasonClassGone: the class is not found, and the Machine recorded
	// a create made with it (its VM may exist).
	ReasonClassGone           = "ClassGone"
	ReasonDriverNotRegistered = "DriverNotRegistered"
	ReasonSecretNotFound      = "SecretNotFound"
	// ReasonSecretRefused: the class names a Secret of another namespace.
	ReasonSecretRefused        = "SecretRefused"
	ReasonBootstrapDataMissing = "BootstrapDataMissing"
	// A contract provider's object cannot be used (internal/contract's
	// Problem reasons).
	ReasonContractKindUnknown    = "KindUnknown"
	ReasonContractLabelMissing   = "ContractLabelMissing"
	ReasonContractObjectNotFound = "ObjectNotFound"
	ReasonContractForbidden      = "Forbidden"
	ReasonContractOwnedElsewhere = "OwnedByAnotherController"

	// ReasonCreating: a create was started (InfrastructureReady False),
	// recorded before the call.
	ReasonCreating = "Creating"
)

// pendingReasons are InfrastructureReady/BootstrapReady reasons that mean a
// prerequisite is missing: the Machine is Pending, not Provisioning.
var pendingReasons = map[string]bool{
	ReasonClassNotFound: true, ReasonClassGone: true, ReasonDriverNotRegistered: true,
	ReasonSecretNotFound: true, ReasonSecretRefused: true, ReasonBootstrapDataMissing: true,
	ReasonContractKindUnknown: true, ReasonContractLabelMissing: true, ReasonContractObjectNotFound: true,
	ReasonContractForbidden: true, ReasonContractOwnedElsewhere: true,
}

// Phase summarises a Machine's fields and conditions as a phase. It is
// the only place phases are decided: the machine controller writes it as
// status.phase, and the MachineSet ranks its scale-down victims by it.
// Nothing decides from status.phase, written at the end of a reconcile
// and so possibly behind the fields written with it or after it: a
// controller that needs a phase computes it from the fields with this
// function (docs/machine-phases.md).
func Phase(m *v1alpha1.Machine) v1alpha1.MachinePhase {
	conds := m.Status.Conditions
	infra := meta.FindStatusCondition(conds, v1alpha1.InfrastructureReadyCondition)
	boot := meta.FindStatusCondition(conds, v1alpha1.BootstrapReadyCondition)
	op := m.Status.LastOperation
	switch {
	case !m.DeletionTimestamp.IsZero():
		return v1alpha1.PhaseTerminating
	case m.Status.FailureReason != "":
		return v1alpha1.PhaseFailed
	case m.Status.UnhealthySince != nil:
		return v1alpha1.PhaseUnknown
	case meta.IsStatusConditionTrue(conds, v1alpha1.ReadyCondition):
		return v1alpha1.PhaseRunning
	case infra != nil && infra.Status == "True":
		return v1alpha1.PhaseProvisioned
	case op.State == v1alpha1.OperationFailed &&
		(op.Type == v1alpha1.OperationCreate || op.Type == v1alpha1.OperationInitialize):
		return v1alpha1.PhaseCrashLoopBackOff
	case boot != nil && boot.Status != "True" && pendingReasons[boot.Reason],
		infra != nil && infra.Status != "True" && pendingReasons[infra.Reason],
		infra == nil && boot == nil:
		return v1alpha1.PhasePending
	}
	return v1alpha1.PhaseProvisioning
}

// CreateMayBeInFlight reports whether a VM for m may exist, or be on its
// way, that m does not record as its own: m has no providerID yet (its
// create may be running), its InfrastructureReady condition says a create
// was started (again, for a VM that was lost), or its last create or
// initialization failed (a create may have half-succeeded; the retry looks
// for that VM). It decides from the fields the machine controller records
// around CreateMachine, never from status.phase; the safety controller's
// orphan collection protects every VM of such a Machine.
func CreateMayBeInFlight(m *v1alpha1.Machine) bool {
	if m.Spec.ProviderID == "" {
		return true
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.InfrastructureReadyCondition); c != nil &&
		c.Status != metav1.ConditionTrue && c.Reason == ReasonCreating {
		return true
	}
	op := m.Status.LastOperation
	return op.State == v1alpha1.OperationFailed && (op.Type == v1alpha1.OperationCreate || op.Type == v1alpha1.OperationInitialize)
}
