package machinedeployment

// Condition reasons of a MachineDeployment.
const (
	reasonMinimumAvailable   = "MinimumReplicasAvailable"
	reasonMinimumUnavailable = "MinimumReplicasUnavailable"
	reasonNewSetCreated      = "NewMachineSetCreated"
	reasonFoundNewSet        = "FoundNewMachineSet"
	reasonSetUpdated         = "MachineSetUpdated"
	reasonNewSetAvailable    = "NewMachineSetAvailable"
	reasonDeadlineExceeded   = "ProgressDeadlineExceeded"
	reasonPaused             = "DeploymentPaused"
	reasonResumed            = "DeploymentResumed"
	reasonFrozen             = "FrozenBySafetyController"
	reasonBoundsValid        = "BoundsValid"
	reasonBoundsInvalid      = "InvalidBounds"
	reasonRolledBack         = "RolledBack"
	reasonRollbackNotFound   = "RollbackRevisionNotFound"
	reasonRollbackUnchanged  = "RollbackTemplateUnchanged"
	reasonScalingSet         = "ScalingMachineSet"
	reasonInPlaceUpdate      = "InPlaceUpdate"
	reasonInPlaceRefused     = "InPlaceUpdateRefused"
	reasonInPlaceFailed      = "InPlaceUpdateFailed"
	reasonAwaitingSelection  = "AwaitingSelection"
)
