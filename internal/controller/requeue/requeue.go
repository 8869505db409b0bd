// Package requeue combines the results of a reconcile's steps.
package requeue

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ConflictRetry is how soon a reconcile that lost a write race (a
// Conflict) runs again: long enough for the cache to see the write it lost
// to, and without the error backoff and stack trace an error would bring.
const ConflictRetry = 200 * time.Millisecond

// DeadlineStep bounds how far ahead a reconcile asks to be called back
// for a deadline (Deadline).
const DeadlineStep = time.Minute

// Deadline is the result that calls a reconcile back for a deadline left
// away, in steps of at most DeadlineStep: each callback asks again for
// what is then left, so the deadline is met on time. Asking once for the
// whole of it would leave the queue holding the request until then, even
// once the object no longer needs it (it became Running, it was deleted):
// a 20-minute creation timeout kept one waiting entry for each Machine
// created in the last 20 minutes, and the stale-Node check one for each
// new Node (docs/benchmarks.md, "The health sweep and the deadlines").
func Deadline(left time.Duration) reconcile.Result {
	return reconcile.Result{RequeueAfter: min(left, DeadlineStep)}
}

// Soonest returns the result asking to be called back soonest; a result
// without RequeueAfter asks nothing and loses to any that does.
func Soonest(a, b reconcile.Result) reconcile.Result {
	switch {
	case a.RequeueAfter == 0:
		return b
	case b.RequeueAfter == 0 || a.RequeueAfter < b.RequeueAfter:
		return a
	}
	return b
}

// Result is what a Reconcile returns for its steps' res and err: err alone
// when there is one — controller-runtime ignores a result beside an error
// and retries after its rate limiter's backoff — else res.
func Result(res reconcile.Result, err error) (reconcile.Result, error) {
	if err != nil {
		return reconcile.Result{}, err
	}
	return res, nil
}

// Step is one step of a reconcile over its per-request scope S.
type Step[S any] func(ctx context.Context, s S) (reconcile.Result, error)

// Run runs steps in order, keeping the soonest requeue, until one fails or
// stop says the reconcile is over.
func Run[S any](ctx context.Context, s S, stop func() bool, steps ...Step[S]) (reconcile.Result, error) {
	var res reconcile.Result
	for _, step := range steps {
		stepRes, err := step(ctx, s)
		res = Soonest(res, stepRes)
		if err != nil || stop() {
			return res, err
		}
	}
	return res, nil
}
