package driver

// Action is what the machine controller does after a driver call returned
// a code.
type Action string

// The actions.
const (
	// Continue: the call did what was asked (for DeleteMachine, NotFound too:
	// the VM is gone); go on with the next step.
	Continue Action = "Continue"
	// Retry the call after an exponential backoff with jitter.
	Retry Action = "Retry"
	// RetryLong retries after the longer backoff used for exhausted quota
	// or capacity, which frees up slowly.
	RetryLong Action = "RetryLong"
	// SkipStep: the optional step cannot or need not be done; go on without it
	// (InitializeMachine Unimplemented or NotFound).
	SkipStep Action = "SkipStep"
	// CreateVM: no VM exists for the Machine yet, or the driver cannot tell
	// (GetMachineStatus NotFound or Unimplemented); call CreateMachine,
	// which is idempotent.
	CreateVM Action = "CreateVM"
	// InitializeVM: the VM exists but is not initialized; call InitializeMachine.
	InitializeVM Action = "InitializeVM"
	// CollectOrphans: several VMs claim the Machine; trigger the orphan VM
	// collection, then retry.
	CollectOrphans Action = "CollectOrphans"
	// Terminal: the call will not succeed without a person changing
	// something. During creation the Machine is marked Failed (and
	// replaced); during deletion it stays Terminating, reports the error and
	// retries with the long backoff, never dropping a VM it cannot delete.
	Terminal Action = "Terminal"
)

// Outcome is the recovery for one method and code.
type Outcome struct {
	// Action the machine controller takes.
	Action Action
	// AutoRetry is the "Auto Retry Required" column of the Machine
	// Controller Manager's tables (docs/driver-errors.md).
	AutoRetry bool
	// Recovery is the recovery behaviour the specification describes, for
	// messages and documentation.
	Recovery string
}

// Retryable reports whether the controller calls the method again by itself.
func (o Outcome) Retryable() bool {
	switch o.Action {
	case Retry, RetryLong, CollectOrphans:
		return true
	}
	return false
}

func row(action Action, autoRetry bool, recovery string) Outcome {
	return Outcome{Action: action, AutoRetry: autoRetry, Recovery: recovery}
}

// Recovery texts shared by many rows.
const (
	retryLater       = "Retry operation after sometime"
	fixParameters    = "Update providerSpec to fix issues."
	fixMachineName   = "Update Machine.Name to fix issues."
	fixPermissions   = "Update requestor permissions to grant the same"
	manualVMFix      = "Manual intervention might be needed to fix the state of the VM"
	waitPending      = "Wait until previous pending operation is processed"
	alternateLogic   = "Retry with an alternate logic or implement this method at the provider. Most methods by default are in this state"
	manualFix        = "Needs manual intervension to fix this"
	fixCredentials   = "Fix the provider credentials"
	cancelledCleanup = "Call was cancelled; it is made again on the next reconcile"
)

// recoveryTable is the Machine Controller Manager's error-code tables, one
// per method, as data; docs/driver-errors.md shows them (a test keeps it
// current). Deviations from them, each deliberate:
//   - Canceled is retried: the original marks it "N", but a cancelled call (the
//     manager shutting down, a deadline of ours) is simply made again.
//   - ResourceExhausted on create is retried with the long backoff: quota
//     and capacity free up without anyone replacing the Machine.
//   - Terminal codes on DeleteMachine block the deletion (see Terminal):
//     a Machine is never forgotten while its VM may still exist.
var recoveryTable = map[Method]map[Code]Outcome{
	MethodCreateMachine: {
		OK:                 row(Continue, false, ""),
		Canceled:           row(Retry, false, cancelledCleanup),
		Unknown:            row(Retry, true, retryLater),
		InvalidArgument:    row(Terminal, false, fixParameters),
		DeadlineExceeded:   row(Retry, true, retryLater),
		AlreadyExists:      row(Terminal, false, "Create machine with a different name"),
		PermissionDenied:   row(Terminal, false, fixPermissions),
		ResourceExhausted:  row(RetryLong, false, "Enhance resource limits associated with the user/account to process this"),
		FailedPrecondition: row(Terminal, false, manualVMFix),
		Aborted:            row(Retry, true, waitPending),
		OutOfRange:         row(Terminal, false, "Update request paramaters to request valid resource requests"),
		Unimplemented:      row(Terminal, false, alternateLogic),
		Internal:           row(Terminal, false, manualFix),
		Unavailable:        row(Retry, true, retryLater),
		Unauthenticated:    row(Terminal, false, fixCredentials),
	},
	MethodInitializeMachine: {
		OK:            row(Continue, false, ""),
		NotFound:      row(SkipStep, false, "Skip Initialization and Continue"),
		Unimplemented: row(SkipStep, false, "Skip Initialization and continue"),
		Internal:      row(Retry, true, "Needs investigation and possible intervention to fix this"),
		Uninitialized: row(Retry, true, "Initialization is reattempted in next reconcile cycle"),
	},
	MethodDeleteMachine: {
		OK:                 row(Continue, false, ""),
		Canceled:           row(Retry, false, cancelledCleanup),
		Unknown:            row(Retry, true, retryLater),
		InvalidArgument:    row(Terminal, false, fixMachineName),
		DeadlineExceeded:   row(Retry, true, retryLater),
		NotFound:           row(Continue, false, "The VM is already gone"),
		PermissionDenied:   row(Terminal, false, fixPermissions),
		FailedPrecondition: row(Terminal, false, manualVMFix),
		Aborted:            row(Retry, true, waitPending),
		Unimplemented:      row(Terminal, false, alternateLogic),
		Internal:           row(Terminal, false, manualFix),
		Unavailable:        row(Retry, true, retryLater),
		Unauthenticated:    row(Terminal, false, fixCredentials),
	},
	MethodGetMachineStatus: {
		OK:                 row(Continue, false, ""),
		Canceled:           row(Retry, false, cancelledCleanup),
		Unknown:            row(Retry, true, retryLater),
		InvalidArgument:    row(Terminal, false, fixMachineName),
		DeadlineExceeded:   row(Retry, true, retryLater),
		NotFound:           row(CreateVM, false, "Not required"),
		PermissionDenied:   row(Terminal, false, fixPermissions),
		FailedPrecondition: row(Terminal, false, manualVMFix),
		OutOfRange:         row(CollectOrphans, true, "Orphan VM handler to cleanup orphan VMs / Manual intervention maybe required if orphan VM handler isn’t enabled."),
		Unimplemented:      row(CreateVM, false, alternateLogic),
		Internal:           row(Terminal, false, manualFix),
		Unavailable:        row(Retry, true, retryLater),
		Unauthenticated:    row(Terminal, false, fixCredentials),
		Uninitialized:      row(InitializeVM, false, "Initialization is reattempted in next reconcile cycle"),
	},
	MethodListMachines: {
		OK:               row(Continue, false, ""),
		Canceled:         row(Retry, false, cancelledCleanup),
		Unknown:          row(Retry, true, retryLater),
		InvalidArgument:  row(Terminal, false, fixParameters),
		DeadlineExceeded: row(Retry, true, retryLater),
		PermissionDenied: row(Terminal, false, fixPermissions),
		Unimplemented:    row(SkipStep, false, alternateLogic),
		Internal:         row(Terminal, false, manualFix),
		Unavailable:      row(Retry, true, retryLater),
		Unauthenticated:  row(Terminal, false, fixCredentials),
	},
	MethodGetVolumeIDs: {
		OK:               row(Continue, false, ""),
		Canceled:         row(Retry, false, cancelledCleanup),
		Unknown:          row(Retry, true, retryLater),
		InvalidArgument:  row(Terminal, false, "Update PVSpecList to fix issues."),
		DeadlineExceeded: row(Retry, true, retryLater),
		Unimplemented:    row(SkipStep, false, alternateLogic),
		Internal:         row(Terminal, false, manualFix),
		Unavailable:      row(Retry, true, retryLater),
	},
	// UpdateMachine has no table in the original; it follows the same shape.
	// Terminal here records the failure and waits for the next class change.
	MethodUpdateMachine: {
		OK:               row(Continue, false, ""),
		Canceled:         row(Retry, false, cancelledCleanup),
		Unknown:          row(Retry, true, retryLater),
		InvalidArgument:  row(Terminal, false, fixParameters),
		DeadlineExceeded: row(Retry, true, retryLater),
		NotFound:         row(SkipStep, false, "The VM is gone; the health check replaces the Machine"),
		Aborted:          row(Retry, true, waitPending),
		Unimplemented:    row(SkipStep, false, "Hot update is not supported by this driver; the change stays unapplied and is offered again after the backoff"),
		Internal:         row(Terminal, false, manualFix),
		Unavailable:      row(Retry, true, retryLater),
	},
}

// Classify returns what the machine controller does after method returned
// code. Codes a method's table does not list are treated by their general
// meaning: transient ones (Canceled, Unknown, DeadlineExceeded, Aborted,
// Unavailable) are retried, ResourceExhausted is retried slowly, and the
// rest are terminal.
func Classify(method Method, code Code) Outcome {
	if o, ok := recoveryTable[method][code]; ok {
		return o
	}
	switch code {
	case OK:
		return row(Continue, false, "")
	case Canceled, Unknown, DeadlineExceeded, Aborted, Unavailable:
		return row(Retry, true, retryLater)
	case ResourceExhausted:
		return row(RetryLong, false, "Wait for quota or capacity")
	}
	return row(Terminal, false, "The driver returned "+code.String()+", which "+string(method)+" does not expect; needs manual intervention")
}

// ClassifyError is Classify for the error a driver call returned.
func ClassifyError(method Method, err error) Outcome {
	return Classify(method, CodeOf(err))
}
