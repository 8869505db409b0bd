// Package requeue combines the results of a reconcile's steps.
package requeue

import "sigs.k8s.io/controller-runtime/pkg/reconcile"

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
