package machine

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/contract"
)

// Condition reasons set by the machine controller.
const (
	ReasonClassNotFound = "ClassNotFound"
	// ReasonClassGone: the class is not found, and the Machine recorded
	// a create made with it (its VM may exist); see classMissing.
	ReasonClassGone           = "ClassGone"
	ReasonDriverNotRegistered = "DriverNotRegistered"
	ReasonSecretNotFound      = "SecretNotFound"
	// ReasonSecretRefused: the class names a Secret of another namespace.
	ReasonSecretRefused        = "SecretRefused"
	ReasonBootstrapDataMissing = "BootstrapDataMissing"
	ReasonBootstrapDataReady   = "BootstrapDataReady"
	ReasonCreating             = "Creating"
	ReasonCreateFailed         = "CreateFailed"
	ReasonInitializeFailed     = "InitializeFailed"
	ReasonProvisioned          = "Provisioned"
	ReasonNodeNotFound         = "NodeNotFound"
	ReasonStaleNode            = "StaleNode"
	ReasonNodeReady            = "NodeReady"
	ReasonNodeNotReady         = "NodeNotReady"
	ReasonNodeHealthy          = "NodeHealthy"
	ReasonNodeUnhealthy        = "NodeConditionsUnhealthy"
	ReasonRunning              = "Running"
	ReasonUnhealthy            = "Unhealthy"

	// Failure reasons (status.failureReason).
	FailureCreationTimeout = "CreationTimeout"
	FailureHealthTimeout   = "HealthTimeout"
	FailureHealthCheck     = "MachineHealthCheck"
	FailureCreateError     = "CreateError"
	FailureNodeDeleteAsked = "NodeTriggerDeletion"
	FailureVMLost          = "VMLost"
)

// pendingReasons are InfrastructureReady/BootstrapReady reasons that mean a
// prerequisite is missing: the Machine is Pending, not Provisioning.
var pendingReasons = map[string]bool{
	ReasonClassNotFound: true, ReasonClassGone: true, ReasonDriverNotRegistered: true,
	ReasonSecretNotFound: true, ReasonSecretRefused: true, ReasonBootstrapDataMissing: true,
	contract.ReasonKindUnknown: true, contract.ReasonContractMissing: true, contract.ReasonObjectNotFound: true,
	contract.ReasonForbidden: true, contract.ReasonOwnedElsewhere: true,
}

// ComputePhase summarises a Machine's fields and conditions as a phase. It
// is the only place phases are decided. Nothing decides from
// status.phase, written at the end of a reconcile and so possibly behind
// the fields written with it or after it: a controller that needs a phase
// computes it from the fields with this function.
func ComputePhase(m *v1alpha1.Machine) v1alpha1.MachinePhase {
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
// for that VM). It decides from the fields the controller records around
// CreateMachine, never from status.phase.
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
