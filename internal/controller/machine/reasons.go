package machine

import "github.com/millwright-dev/millwright/internal/machinefacts"

// Condition reasons set by the machine controller. Those the phase reads
// are machinefacts' (one definition of what they mean).
const (
	ReasonClassNotFound = machinefacts.ReasonClassNotFound
	// ReasonClassGone: the class is not found, and the Machine recorded
	// a create made with it (its VM may exist); see classMissing.
	ReasonClassGone           = machinefacts.ReasonClassGone
	ReasonDriverNotRegistered = machinefacts.ReasonDriverNotRegistered
	ReasonSecretNotFound      = machinefacts.ReasonSecretNotFound
	// ReasonSecretRefused: the class names a Secret of another namespace.
	ReasonSecretRefused        = machinefacts.ReasonSecretRefused
	ReasonBootstrapDataMissing = machinefacts.ReasonBootstrapDataMissing
	ReasonBootstrapDataReady   = "BootstrapDataReady"
	ReasonCreating             = machinefacts.ReasonCreating
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
