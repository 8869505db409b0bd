package machine

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// classMissing records that the Machine's class is not found. The reason
// says whether a create was ever started with it (docs/machine-phases.md,
// "A class that is not there"):
//
//   - ClassNotFound: the Machine records no create (no providerID, no
//     create's outcome, never queued for one). A recorded ClassNotFound
//     stays true: a create that finds the class later records that it
//     started before the call (see recordCreateStart), so its deletion
//     needs no VM deleted (see createNeverStarted).
//   - ClassGone: it records one; its VM may exist, and only the class's
//     driver can delete it, so its deletion waits for the class (or a
//     person). ClassGone stays once recorded: it is evidence too.
func classMissing(r *Reconciler, s *scope, key types.NamespacedName) {
	reason, message := ReasonClassNotFound, "MachineClass "+key.Name+" not found in namespace "+key.Namespace
	if createRecorded(s) {
		reason = ReasonClassGone
		message += "; a create was started with it, so the Machine's VM may exist: recreate the class, or remove the Machine's finalizer once its VM is gone"
	}
	r.missing(s, v1alpha1.InfrastructureReadyCondition, reason, message)
}

// createRecorded reports whether the Machine records a create started
// for it: a providerID, a CreateQueued condition (it waited for a create
// slot), a create or initialization as its last operation (now or as the
// reconcile read it: a deletion's first step replaces it), or an
// InfrastructureReady condition other than "not found, nothing made".
func createRecorded(s *scope) bool {
	m := s.machine
	if m.Spec.ProviderID != "" || s.condition(v1alpha1.CreateQueuedCondition) != nil {
		return true
	}
	if op := m.Status.LastOperation.Type; s.createOpRead || op == v1alpha1.OperationCreate || op == v1alpha1.OperationInitialize {
		return true
	}
	return !noCreateSince(s.condition(v1alpha1.InfrastructureReadyCondition))
}

// noCreateSince reports whether an InfrastructureReady condition (nil:
// none yet) says that no create was started since it was written: it is
// absent, or names a missing class or driver (no create runs without
// them, and one that finds them records its start first).
func noCreateSince(c *metav1.Condition) bool {
	return c == nil || (c.Status != "True" && (c.Reason == ReasonClassNotFound || c.Reason == ReasonDriverNotRegistered))
}

// createNeverStarted reports whether the Machine being deleted, whose
// class is not found, never started a create: it has no providerID, this
// process knows no create of it, and its InfrastructureReady condition,
// just set by classMissing, is ClassNotFound. Its deletion has no VM to
// delete.
func (r *Reconciler) createNeverStarted(s *scope) bool {
	if s.machine.Spec.ProviderID != "" || r.creates.known(s.machine.UID) {
		return false
	}
	c := s.condition(v1alpha1.InfrastructureReadyCondition)
	return c != nil && c.Reason == ReasonClassNotFound
}
