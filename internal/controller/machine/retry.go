package machine

import (
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/driverpolicy"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// methodOf is the driver method whose failure an operation records.
var methodOf = map[v1alpha1.MachineOperationType]driver.Method{
	v1alpha1.OperationCreate:     driver.MethodCreateMachine,
	v1alpha1.OperationInitialize: driver.MethodInitializeMachine,
	v1alpha1.OperationDelete:     driver.MethodDeleteMachine,
	v1alpha1.OperationUpdate:     driver.MethodUpdateMachine,
}

// failed records a failed driver call and decides, from the driver
// package's retry table, when to try again — or that the Machine failed for good.
func (r *Reconciler) failed(s *scope, op v1alpha1.MachineOperationType, method driver.Method, err error) reconcile.Result {
	code := driver.CodeOf(err)
	outcome := driverpolicy.Classify(method, code)
	message := fmt.Sprintf("%s failed with %s: %s", method, code, driver.MessageOf(err))
	if outcome.Recovery != "" {
		message += " (" + outcome.Recovery + ")"
	}
	r.failures.catchUp(s, op)
	s.operation(op, v1alpha1.OperationFailed, code.String(), message)
	if op == v1alpha1.OperationCreate || op == v1alpha1.OperationInitialize {
		reason := ReasonCreateFailed
		if op == v1alpha1.OperationInitialize {
			reason = ReasonInitializeFailed
		}
		s.setCondition(v1alpha1.InfrastructureReadyCondition, "False", reason, message)
	}
	switch {
	case outcome.Action == driverpolicy.Terminal && (op == v1alpha1.OperationCreate || op == v1alpha1.OperationInitialize):
		s.fail(FailureCreateError, message)
		return reconcile.Result{}
	case (outcome.Action == driverpolicy.Terminal || outcome.Action == driverpolicy.Replace) && op == v1alpha1.OperationUpdate:
		return reconcile.Result{} // retried when the class changes again
	}
	n := s.machine.Status.LastOperation.FailureCount
	wait := r.retryAfter(n, outcome.Action)
	r.failures.put(s.machine.UID, failureRecord{op: op, failures: n, retryAt: s.now.Add(wait)})
	return reconcile.Result{RequeueAfter: wait}
}

func (r *Reconciler) retryAfter(failures int32, action driverpolicy.Action) time.Duration {
	if action == driverpolicy.RetryLong || action == driverpolicy.Terminal || action == driverpolicy.Replace {
		return backoff(failures, r.Config.LongBackoffBase, r.Config.LongBackoffCap)
	}
	return backoff(failures, r.Config.BackoffBase, r.Config.BackoffCap)
}

// retryWait is how long the Machine must still wait before retrying its
// last failed operation; zero when it may go ahead. It is computed from the
// status, so it survives restarts and is not cut short by unrelated events,
// and from the memory of the failure, which a stale cache cannot hide.
func (r *Reconciler) retryWait(s *scope) time.Duration {
	wait := r.statusRetryWait(s)
	if rec, ok := r.failures.get(s.machine.UID); ok {
		wait = max(wait, rec.retryAt.Sub(s.now))
	}
	return wait
}

func (r *Reconciler) statusRetryWait(s *scope) time.Duration {
	op := s.machine.Status.LastOperation
	method, ok := methodOf[op.Type]
	if op.State != v1alpha1.OperationFailed || !ok {
		return 0
	}
	code, err := driver.ParseCode(op.ErrorCode)
	if err != nil {
		return 0
	}
	full := r.retryAfter(op.FailureCount, driverpolicy.Classify(method, code).Action)
	floor := full - full/5 // the shortest wait backoff's jitter can produce
	wait := op.LastUpdateTime.Add(floor).Sub(s.now)
	if wait < 0 {
		return 0
	}
	return wait
}
