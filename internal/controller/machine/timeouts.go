package machine

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
)

// checkCreationTimeout fails a Machine that is not Running by its creation
// deadline, or asks to be called back exactly at the deadline (rather than
// at some later resync: a timeout must fire on time).
func (r *Reconciler) checkCreationTimeout(s *scope) reconcile.Result {
	deadline, applies := creationDeadline(s)
	if !applies {
		return reconcile.Result{}
	}
	if left := deadline.Sub(s.now); left > 0 {
		return requeue.Deadline(left)
	}
	msg := fmt.Sprintf("the Machine did not become Running within the creation timeout of %s (%s)",
		s.life.creationTimeout, describeProgress(s.machine))
	if s.vmProgress != "" {
		msg += "; the end of the VM's console:\n" + s.vmProgress
	}
	s.fail(FailureCreationTimeout, msg)
	return reconcile.Result{}
}

// creationDeadline is when a Machine that never ran is Failed; applies is
// false once it ran (or failed). A Machine queued for a create slot of its
// class (CreateQueued True) waits on purpose, and says so: the timeout
// does not run while it waits, and counts from the start of its create
// once it waited (CreateQueued False): a scale-up of hundreds of Machines
// under a tight spec.maxConcurrentCreates must not fail the last ones for
// the queue (docs/concepts.md, "Provisioning limits per class").
func creationDeadline(s *scope) (deadline time.Time, applies bool) {
	if len(s.healthChecks) > 0 {
		return time.Time{}, false // a MachineHealthCheck's nodeStartupTimeout judges instead
	}
	if s.machine.Status.FailureReason != "" || s.isTrue(v1alpha1.ReadyCondition) || s.machine.Status.UnhealthySince != nil {
		return time.Time{}, false
	}
	start, waiting := classlimit.CreateStart(s.machine)
	if waiting {
		return time.Time{}, false
	}
	return start.Add(s.life.creationTimeout), true
}

// creationTimedOut reports whether the creation timeout fails the Machine
// in this reconcile.
func creationTimedOut(s *scope) bool {
	deadline, applies := creationDeadline(s)
	return applies && !s.now.Before(deadline)
}

func describeProgress(m *v1alpha1.Machine) string {
	if m.Status.LastOperation.Description != "" {
		return "last: " + m.Status.LastOperation.Description
	}
	return "phase " + phaseName(m.Status.Phase)
}

// until returns the time left until t, at least a millisecond.
func until(now, t time.Time) time.Duration {
	if d := t.Sub(now); d > time.Millisecond {
		return d
	}
	return time.Millisecond
}
