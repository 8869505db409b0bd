package v1alpha1

// The finalizer, condition types and reasons of the sim provider's kinds,
// one line of meaning each. Millwright's core reads only the Ready
// condition (mirrored into the Machine's InfrastructureReady) and the
// contract fields; the reasons are for people and tests.
const (
	// SimMachineFinalizer holds a SimMachine until its VM is deleted.
	SimMachineFinalizer = GroupName + "/simmachine"

	// ReadyCondition summarises the SimMachine over its whole life:
	// provisioning, running and deletion.
	ReadyCondition = "Ready"
	// PausedCondition is True while the SimMachine or its Machine carries
	// the machine.millwright.dev/paused annotation.
	PausedCondition = "Paused"

	// ReadyReasonProvisioned: the VM exists and is initialized (Ready True).
	ReadyReasonProvisioned = "Provisioned"
	// ReadyReasonWaitingForBootstrapData: the Machine has no
	// spec.bootstrap.dataSecretName yet, or its Secret cannot be read.
	ReadyReasonWaitingForBootstrapData = "WaitingForBootstrapData"
	// ReadyReasonProvisioning: a driver call failed with a retryable code;
	// it is retried with an exponential backoff.
	ReadyReasonProvisioning = "Provisioning"
	// ReadyReasonFailed: a terminal failure; see status.failureReason.
	ReadyReasonFailed = "Failed"
	// ReadyReasonDeleting: the VM is being deleted (retried on failure).
	ReadyReasonDeleting = "Deleting"
	// ReadyReasonDeletionFailed: deleting the VM failed with a terminal
	// code; it is retried slowly, never dropping a VM that may exist.
	ReadyReasonDeletionFailed = "DeletionFailed"

	// PausedReasonPaused: the paused annotation is set (Paused True).
	PausedReasonPaused = "Paused"
	// PausedReasonNotPaused: no paused annotation (Paused False).
	PausedReasonNotPaused = "NotPaused"

	// FailureReasonInvalidConfiguration: the providerSpec or failure domain
	// can never work (the driver said InvalidArgument).
	FailureReasonInvalidConfiguration = "InvalidConfiguration"
	// FailureReasonCreateError: creating or initializing the VM failed with
	// a code that retrying will not fix.
	FailureReasonCreateError = "CreateError"
	// FailureReasonUpdateError: the VM vanished after it was provisioned;
	// the SimMachine never gets a second VM, its Machine must be replaced.
	FailureReasonUpdateError = "UpdateError"
)
