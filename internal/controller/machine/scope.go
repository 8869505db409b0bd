package machine

import (
	"context"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/finalizer"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/patch"
)

// scope is everything one reconcile of one Machine knows and changes. Steps
// change s.machine; the reconciler patches status once at the end.
type scope struct {
	r       *Reconciler
	machine *v1alpha1.Machine
	// writer writes s.machine's changes since it was read (or last
	// written). The status only on the version read (WithStatusLock): the
	// cache may be older than this controller's own last write (a
	// reconcile woken by the Node patch of the one before it), and a
	// status computed from that would undo the newer one — a Running
	// Machine put back to Provisioned. The conflict makes the reconcile
	// start over from fresh state.
	writer *patch.Helper
	// phase is the phase as read, or as last written: recordPhaseChange
	// reports the change from it.
	phase v1alpha1.MachinePhase
	life  lifecycle
	now   time.Time
	log   logr.Logger

	// node is the Machine's Node in the target cluster, once found.
	node *corev1.Node
	// healthChecks are the MachineHealthChecks selecting the Machine: when
	// any does, they alone judge its health (see healthcheck.go).
	healthChecks []string
	// stop ends the reconcile after the current step.
	stop bool
	// gone means the Machine no longer exists (its finalizer was removed).
	gone bool
	// joined means the Machine became Running in this reconcile.
	joined bool
	// vmProgress is what the driver's GetMachineStatus said of the VM's
	// boot in this reconcile (e.g. its console's last lines): a creation
	// timeout quotes it.
	vmProgress string
	// succeeded holds the operations that succeeded in this reconcile, for
	// one Event at its end (see operation).
	succeeded succeededOps
	// createRecorded: this reconcile records the result of a finished
	// CreateMachine call, which may be dropped once the status is written.
	createRecorded bool
	// statusWithCreate: the create of this Machine, which has no
	// providerID, started in this reconcile or is still running; its
	// status is written with the create's outcome, not now (see
	// driverInfra.create).
	statusWithCreate bool
	// askedSlot: this reconcile asked a slot of its class for a create
	// or a delete (indexed by classlimit.Op); a Machine that did not
	// leaves that queue (see leaveQueues).
	askedSlot [2]bool
	// createOpRead: the Machine's lastOperation, as read, was a create or
	// an initialization (see createRecorded).
	createOpRead bool
	// replaced are the versions of the Machine this reconcile's writes
	// replaced, oldest first (see package ownwrites).
	replaced []string
}

// routineOps are the operations every Machine goes through on its way to
// Running. Their success gets no Event unless it ends a failure: an Event
// is an API write, and one per Machine was a fifth of a healthy
// Machine's writes. The Machine's status records them (lastOperation,
// the conditions' transition times); docs/machine-phases.md says what
// Events remain.
//
// The drain is routine too, and so is the Node's deletion after it (see
// deleteNode): a rolling update deletes as many Machines as it creates,
// and the MachineSet's MachinesDeleted Event already names them. Events
// on a Machine about to be gone were a write per replaced Machine.
var routineOps = map[v1alpha1.MachineOperationType]bool{
	v1alpha1.OperationCreate:      true,
	v1alpha1.OperationInitialize:  true,
	v1alpha1.OperationHealthCheck: true,
	v1alpha1.OperationDrain:       true,
}

// succeededOps are successful operations waiting for their Event.
type succeededOps struct {
	reason       string
	descriptions []string
}

// patchObject writes metadata and spec changes (providerID, owner,
// annotations) at once, so they are never lost when a later step fails.
// An owner-reference change is written only on the version read (see
// package patch).
func (s *scope) patchObject(ctx context.Context) error {
	return s.track(func() error { return s.writer.PatchObject(ctx, s.machine) })
}

// track runs one write of s.machine and notes the version it replaced
// (see package ownwrites).
func (s *scope) track(write func() error) error {
	before := s.machine.ResourceVersion
	err := write()
	if v := s.machine.ResourceVersion; v != before && before != "" {
		s.replaced = append(s.replaced, before)
	}
	return err
}

// setFinalizer adds (or, with remove, removes) the Machine's finalizer
// through package finalizer: only if the Machine did not change since this
// reconcile read it, so a finalizer another controller added meanwhile is
// never dropped; a Conflict redoes the reconcile. The writer's snapshot
// takes the written list too, so the finalizer is not sent again.
func (s *scope) setFinalizer(ctx context.Context, remove bool) (wrote bool, err error) {
	err = s.track(func() error {
		if remove {
			wrote, err = finalizer.Remove(ctx, s.r.Client, v1alpha1.MachineFinalizer, s.machine, s.writer.Base())
		} else {
			wrote, err = finalizer.Add(ctx, s.r.Client, v1alpha1.MachineFinalizer, s.machine, s.writer.Base())
		}
		return err
	})
	return wrote, err
}

// patch writes all changes: metadata/spec, then status — but not the
// status of a Machine whose create this reconcile started (see
// driverInfra.create): whatever it holds is computed again, with the
// create's outcome, by the reconcile the end of the call wakes.
func (s *scope) patch(ctx context.Context) error {
	if err := s.patchObject(ctx); err != nil || s.statusWithCreate {
		return err
	}
	return s.track(func() error { return s.writer.PatchStatus(ctx, s.machine) })
}

// checkpoint writes everything now, in the middle of a reconcile; the
// writer's snapshot is then what was written.
func (s *scope) checkpoint(ctx context.Context) error {
	s.machine.Status.Phase = machinefacts.Phase(s.machine)
	if err := s.patch(ctx); err != nil {
		return err
	}
	s.recordPhaseChange()
	s.emitSucceeded()
	return nil
}

// setCondition sets a condition on the Machine; the transition time moves
// only when the status changes.
func (s *scope) setCondition(condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.machine.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message,
		ObservedGeneration: s.machine.Generation,
		LastTransitionTime: metav1.NewTime(s.now),
	})
}

func (s *scope) isTrue(condType string) bool {
	return meta.IsStatusConditionTrue(s.machine.Status.Conditions, condType)
}

func (s *scope) condition(condType string) *metav1.Condition {
	return meta.FindStatusCondition(s.machine.Status.Conditions, condType)
}

func (s *scope) infrastructureReady() bool {
	return s.isTrue(v1alpha1.InfrastructureReadyCondition)
}

// operation records the operation in progress or just finished, and emits
// an Event when it failed or succeeded. FailureCount counts consecutive
// failures of the same operation; it drives the backoff.
func (s *scope) operation(op v1alpha1.MachineOperationType, state v1alpha1.MachineOperationState, code, description string) {
	last := &s.machine.Status.LastOperation
	failures := int32(0)
	if state == v1alpha1.OperationFailed {
		failures = 1
		if last.Type == op && last.State == v1alpha1.OperationFailed {
			failures = last.FailureCount + 1
		}
	}
	// A step that went wrong before (a failure, an unhealthy Node) and
	// now succeeds is news; the routine path is not (see routineOps).
	troubled := last.State == v1alpha1.OperationFailed ||
		(last.Type == v1alpha1.OperationHealthCheck && last.State == v1alpha1.OperationProcessing)
	changed := last.Type != op || last.State != state || last.Description != description || last.ErrorCode != code
	*last = v1alpha1.LastOperation{
		Type: op, State: state, ErrorCode: code, Description: description,
		FailureCount: failures, LastUpdateTime: metav1.NewTime(s.now),
	}
	if !changed && state != v1alpha1.OperationFailed {
		return
	}
	if state != v1alpha1.OperationFailed {
		s.r.failures.forget(s.machine.UID) // the failed operation went through, or another began
	}
	switch {
	case state == v1alpha1.OperationFailed:
		s.event(corev1.EventTypeWarning, string(op)+"Failed", description)
	case state == v1alpha1.OperationSucceeded && !(routineOps[op] && !troubled):
		s.succeeded.reason = string(op) + "Succeeded"
		s.succeeded.descriptions = append(s.succeeded.descriptions, description)
	}
}

// emitSucceeded emits one Normal Event for the operations that succeeded
// in this reconcile (a VM created and initialized is one Event, named
// after the last step), once they are recorded in the status. An Event is
// an API write: one per step would double a healthy Machine's writes.
func (s *scope) emitSucceeded() {
	if ops := s.succeeded; ops.reason != "" {
		s.event(corev1.EventTypeNormal, ops.reason, strings.Join(ops.descriptions, "; "))
	}
	s.succeeded = succeededOps{}
}

// fail marks the Machine Failed for good; its owner replaces it.
func (s *scope) fail(reason, message string) {
	s.machine.Status.FailureReason = reason
	s.machine.Status.FailureMessage = message
	s.statusWithCreate = false // a failure is written now, create in flight or not
	s.setCondition(v1alpha1.ReadyCondition, metav1.ConditionFalse, reason, message)
	s.event(corev1.EventTypeWarning, reason, message)
	s.log.Info("machine failed", "reason", reason, "message", message)
	s.stop = true
}

func (s *scope) event(eventType, reason, message string) {
	if s.r.Recorder != nil {
		s.r.Recorder.Eventf(s.machine, nil, eventType, reason, "Reconcile", "%s", message)
	}
}

// recordPhaseChange logs a phase change, and emits a Warning Event when
// the Machine went wrong (Failed, Unknown, CrashLoopBackOff). The good
// transitions get no Event of their own: the status shows them, and the
// way back from trouble has its operation's Event (see routineOps). An
// Event per phase would multiply a Machine's writes to the API server.
func (s *scope) recordPhaseChange() {
	from, to := s.phase, s.machine.Status.Phase
	if from == to {
		return
	}
	s.phase = to
	s.log.Info("phase changed", "from", from, "to", to)
	if !PhaseTransitionListed(from, to) {
		// The diagram in docs/machine-phases.md is drawn from the table.
		s.log.Error(nil, "phase change missing from PhaseTransitions", "from", phaseName(from), "to", to)
	}
	phaseChangeHook(from, to)
	if to == v1alpha1.PhaseFailed || to == v1alpha1.PhaseUnknown || to == v1alpha1.PhaseCrashLoopBackOff {
		s.event(corev1.EventTypeWarning, "Phase"+string(to), "machine phase changed from "+phaseName(from)+" to "+string(to))
	}
	observePhaseChange(s.machine, from, to, s.now)
}

func phaseName(p v1alpha1.MachinePhase) string {
	if p == "" {
		return "(none)"
	}
	return string(p)
}
