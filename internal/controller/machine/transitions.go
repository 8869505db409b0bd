package machine

import "github.com/millwright-dev/millwright/api/v1alpha1"

// PhaseNew is the From of a Machine's first phase: a new Machine has no
// status.phase yet (docs/machine-phases.md, "Writes on the way to
// Running").
const PhaseNew v1alpha1.MachinePhase = ""

// PhaseTransition is one change of status.phase the machine controller
// makes, and what makes it.
type PhaseTransition struct {
	From, To v1alpha1.MachinePhase
	// Cause says, for people, what moved the Machine.
	Cause string
}

// PhaseTransitions is every change of status.phase the machine controller
// may make. machinefacts.Phase decides a phase from the fields; this table
// says which changes of those fields a reconcile makes, so that the picture
// docs/images/machine-phases.svg, drawn from it by hack/phasediagram,
// shows what the controller does: recordPhaseChange logs a change that is
// not listed as an error, and the package's tests fail on one (see
// phaseChangeHook).
var PhaseTransitions = []PhaseTransition{
	{PhaseNew, v1alpha1.PhasePending, "a prerequisite is missing"},
	{PhaseNew, v1alpha1.PhaseProvisioning, "the provider is creating the VM"},
	{PhaseNew, v1alpha1.PhaseProvisioned, "VM created"},
	{PhaseNew, v1alpha1.PhaseRunning, "VM created, Node already Ready"},
	{PhaseNew, v1alpha1.PhaseCrashLoopBackOff, "create failed, retryable"},
	{PhaseNew, v1alpha1.PhaseFailed, "terminal error"},

	{v1alpha1.PhasePending, v1alpha1.PhaseProvisioning, "prerequisites found"},
	{v1alpha1.PhasePending, v1alpha1.PhaseProvisioned, "VM created"},
	{v1alpha1.PhasePending, v1alpha1.PhaseCrashLoopBackOff, "create failed, retryable"},
	{v1alpha1.PhasePending, v1alpha1.PhaseFailed, "creation timeout"},

	{v1alpha1.PhaseProvisioning, v1alpha1.PhaseProvisioned, "VM created"},
	{v1alpha1.PhaseProvisioning, v1alpha1.PhaseRunning, "VM created, Node Ready"},
	{v1alpha1.PhaseProvisioning, v1alpha1.PhaseCrashLoopBackOff, "create failed, retryable"},
	{v1alpha1.PhaseProvisioning, v1alpha1.PhaseFailed, "creation timeout, terminal error"},

	{v1alpha1.PhaseCrashLoopBackOff, v1alpha1.PhaseProvisioning, "retry after the backoff"},
	{v1alpha1.PhaseCrashLoopBackOff, v1alpha1.PhaseProvisioned, "retry created the VM"},
	{v1alpha1.PhaseCrashLoopBackOff, v1alpha1.PhaseRunning, "retry created the VM, Node Ready"},
	{v1alpha1.PhaseCrashLoopBackOff, v1alpha1.PhaseFailed, "creation timeout, terminal error"},

	{v1alpha1.PhaseProvisioned, v1alpha1.PhaseRunning, "Node Ready"},
	{v1alpha1.PhaseProvisioned, v1alpha1.PhaseProvisioning, "create again (the driver cannot tell)"},
	{v1alpha1.PhaseProvisioned, v1alpha1.PhaseFailed, "creation timeout, VM lost, health check"},

	{v1alpha1.PhaseRunning, v1alpha1.PhaseUnknown, "Node not Ready, gone or unhealthy"},
	{v1alpha1.PhaseRunning, v1alpha1.PhaseFailed, "provider failure, health check"},

	{v1alpha1.PhaseUnknown, v1alpha1.PhaseRunning, "Node recovered"},
	{v1alpha1.PhaseUnknown, v1alpha1.PhaseFailed, "health timeout, health check"},

	// Any Machine may be deleted; a Failed one is deleted by its owner.
	{PhaseNew, v1alpha1.PhaseTerminating, "deleted"},
	{v1alpha1.PhasePending, v1alpha1.PhaseTerminating, "deleted"},
	{v1alpha1.PhaseProvisioning, v1alpha1.PhaseTerminating, "deleted"},
	{v1alpha1.PhaseCrashLoopBackOff, v1alpha1.PhaseTerminating, "deleted"},
	{v1alpha1.PhaseProvisioned, v1alpha1.PhaseTerminating, "deleted"},
	{v1alpha1.PhaseRunning, v1alpha1.PhaseTerminating, "deleted"},
	{v1alpha1.PhaseUnknown, v1alpha1.PhaseTerminating, "deleted"},
	{v1alpha1.PhaseFailed, v1alpha1.PhaseTerminating, "replaced by its owner"},
}

// PhaseTransitionListed reports whether PhaseTransitions has the change
// from → to.
func PhaseTransitionListed(from, to v1alpha1.MachinePhase) bool {
	for _, t := range PhaseTransitions {
		if t.From == from && t.To == to {
			return true
		}
	}
	return false
}

// phaseChangeHook is called with every phase change; the package's tests
// set it to fail on a change PhaseTransitions does not list.
var phaseChangeHook = func(from, to v1alpha1.MachinePhase) {}
