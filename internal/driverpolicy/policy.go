// Package driverpolicy is what the machine controller (and the safety
// controller) does after a driver call returned a code: the per-method
// recovery tables of docs/driver-errors.md. The codes and their meaning
// are the driver SDK's (pkg/driver); what the manager makes of them is
// its own policy, and lives here.
package driverpolicy

import "github.com/millwright-dev/millwright/pkg/driver"

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
	// Replace: the driver cannot make this change to a running VM
	// (UpdateMachine FailedPrecondition: a new image, another zone); only a
	// new Machine can have it. An in-place update is Refused and the
	// MachineDeployment replaces the Machine instead; a hot update of a
	// class edited in place is recorded and not retried until the class
	// changes again (docs/driver-errors.md).
	Replace Action = "Replace"
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
var recoveryTable = map[driver.Method]map[driver.Code]Outcome{
	driver.MethodCreateMachine: {
		driver.OK:                 row(Continue, false, ""),
		driver.Canceled:           row(Retry, false, cancelledCleanup),
		driver.Unknown:            row(Retry, true, retryLater),
		driver.InvalidArgument:    row(Terminal, false, fixParameters),
		driver.DeadlineExceeded:   row(Retry, true, retryLater),
		driver.AlreadyExists:      row(Terminal, false, "Create machine with a different name"),
		driver.PermissionDenied:   row(Terminal, false, fixPermissions),
		driver.ResourceExhausted:  row(RetryLong, false, "Enhance resource limits associated with the user/account to process this"),
		driver.FailedPrecondition: row(Terminal, false, manualVMFix),
		driver.Aborted:            row(Retry, true, waitPending),
		driver.OutOfRange:         row(Terminal, false, "Update request paramaters to request valid resource requests"),
		driver.Unimplemented:      row(Terminal, false, alternateLogic),
		driver.Internal:           row(Terminal, false, manualFix),
		driver.Unavailable:        row(Retry, true, retryLater),
		driver.Unauthenticated:    row(Terminal, false, fixCredentials),
	},
	driver.MethodInitializeMachine: {
		driver.OK:            row(Continue, false, ""),
		driver.NotFound:      row(SkipStep, false, "Skip Initialization and Continue"),
		driver.Unimplemented: row(SkipStep, false, "Skip Initialization and continue"),
		driver.Internal:      row(Retry, true, "Needs investigation and possible intervention to fix this"),
		driver.Uninitialized: row(Retry, true, "Initialization is reattempted in next reconcile cycle"),
	},
	driver.MethodDeleteMachine: {
		driver.OK:                 row(Continue, false, ""),
		driver.Canceled:           row(Retry, false, cancelledCleanup),
		driver.Unknown:            row(Retry, true, retryLater),
		driver.InvalidArgument:    row(Terminal, false, fixMachineName),
		driver.DeadlineExceeded:   row(Retry, true, retryLater),
		driver.NotFound:           row(Continue, false, "The VM is already gone"),
		driver.PermissionDenied:   row(Terminal, false, fixPermissions),
		driver.FailedPrecondition: row(Terminal, false, manualVMFix),
		driver.Aborted:            row(Retry, true, waitPending),
		driver.Unimplemented:      row(Terminal, false, alternateLogic),
		driver.Internal:           row(Terminal, false, manualFix),
		driver.Unavailable:        row(Retry, true, retryLater),
		driver.Unauthenticated:    row(Terminal, false, fixCredentials),
	},
	driver.MethodGetMachineStatus: {
		driver.OK:                 row(Continue, false, ""),
		driver.Canceled:           row(Retry, false, cancelledCleanup),
		driver.Unknown:            row(Retry, true, retryLater),
		driver.InvalidArgument:    row(Terminal, false, fixMachineName),
		driver.DeadlineExceeded:   row(Retry, true, retryLater),
		driver.NotFound:           row(CreateVM, false, "Not required"),
		driver.PermissionDenied:   row(Terminal, false, fixPermissions),
		driver.FailedPrecondition: row(Terminal, false, manualVMFix),
		driver.OutOfRange:         row(CollectOrphans, true, "Orphan VM handler to cleanup orphan VMs / Manual intervention maybe required if orphan VM handler isn’t enabled."),
		driver.Unimplemented:      row(CreateVM, false, alternateLogic),
		driver.Internal:           row(Terminal, false, manualFix),
		driver.Unavailable:        row(Retry, true, retryLater),
		driver.Unauthenticated:    row(Terminal, false, fixCredentials),
		driver.Uninitialized:      row(InitializeVM, false, "Initialization is reattempted in next reconcile cycle"),
	},
	driver.MethodListMachines: {
		driver.OK:               row(Continue, false, ""),
		driver.Canceled:         row(Retry, false, cancelledCleanup),
		driver.Unknown:          row(Retry, true, retryLater),
		driver.InvalidArgument:  row(Terminal, false, fixParameters),
		driver.DeadlineExceeded: row(Retry, true, retryLater),
		driver.PermissionDenied: row(Terminal, false, fixPermissions),
		driver.Unimplemented:    row(SkipStep, false, alternateLogic),
		driver.Internal:         row(Terminal, false, manualFix),
		driver.Unavailable:      row(Retry, true, retryLater),
		driver.Unauthenticated:  row(Terminal, false, fixCredentials),
	},
	driver.MethodGetVolumeIDs: {
		driver.OK:               row(Continue, false, ""),
		driver.Canceled:         row(Retry, false, cancelledCleanup),
		driver.Unknown:          row(Retry, true, retryLater),
		driver.InvalidArgument:  row(Terminal, false, "Update PVSpecList to fix issues."),
		driver.DeadlineExceeded: row(Retry, true, retryLater),
		driver.Unimplemented:    row(SkipStep, false, alternateLogic),
		driver.Internal:         row(Terminal, false, manualFix),
		driver.Unavailable:      row(Retry, true, retryLater),
	},
	// UpdateMachine has no table in the original; it follows the same shape.
	// Terminal here records the failure and waits for the next class change
	// (an in-place update: Failed); Replace is FailedPrecondition.
	driver.MethodUpdateMachine: {
		driver.OK:               row(Continue, false, ""),
		driver.Canceled:         row(Retry, false, cancelledCleanup),
		driver.Unknown:          row(Retry, true, retryLater),
		driver.InvalidArgument:  row(Terminal, false, fixParameters),
		driver.DeadlineExceeded: row(Retry, true, retryLater),
		driver.NotFound:         row(SkipStep, false, "The VM is gone; the health check replaces the Machine"),
		driver.Aborted:          row(Retry, true, waitPending),
		driver.Unimplemented:    row(SkipStep, false, "Hot update is not supported by this driver; the change stays unapplied and is offered again after the backoff"),
		driver.Internal:         row(Terminal, false, manualFix),
		driver.Unavailable:      row(Retry, true, retryLater),
		// The driver's way of saying "not on a running VM": the one code
		// that makes an in-place update replace the Machine.
		driver.FailedPrecondition: row(Replace, false, "This change cannot be applied to a running VM; replace the Machine"),
	},
}

// Classify returns what the machine controller does after method returned
// code. Codes a method's table does not list are treated by their general
// meaning: transient ones (Canceled, Unknown, DeadlineExceeded, Aborted,
// Unavailable) are retried, ResourceExhausted is retried slowly, and the
// rest are terminal.
func Classify(method driver.Method, code driver.Code) Outcome {
	if o, ok := recoveryTable[method][code]; ok {
		return o
	}
	switch code {
	case driver.OK:
		return row(Continue, false, "")
	case driver.Canceled, driver.Unknown, driver.DeadlineExceeded, driver.Aborted, driver.Unavailable:
		return row(Retry, true, retryLater)
	case driver.ResourceExhausted:
		return row(RetryLong, false, "Wait for quota or capacity")
	}
	return row(Terminal, false, "The driver returned "+code.String()+", which "+string(method)+" does not expect; needs manual intervention")
}

// ClassifyError is Classify for the error a driver call returned.
func ClassifyError(method driver.Method, err error) Outcome {
	return Classify(method, driver.CodeOf(err))
}
