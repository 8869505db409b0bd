// Package ctrlconfig holds the controller settings every controller-runtime
// manager Millwright starts shares: the manager binary's, the sim's and
// the test harnesses'.
package ctrlconfig

import (
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/config"
)

// Controller is the controller configuration of every manager.
//
// The priority queue is off: in controller-runtime v0.24 it can deadlock
// when a controller stops (a ready item is handed to a worker that has
// already left on shutdown, and the queue's lock is never released), so
// the manager waits out its whole graceful-shutdown timeout and reports
// an error. The fix (controller-runtime #3540) is only released with
// v0.25, which needs Kubernetes 0.37 libraries; the plain rate-limited
// queue has no such race. Turn it back on when controller-runtime moves.
func Controller() config.Controller {
	return config.Controller{UsePriorityQueue: ptr.To(false)}
}

// ForTests is Controller with controller names allowed to repeat, since
// every test starts its own manager in one process.
func ForTests() config.Controller {
	c := Controller()
	c.SkipNameValidation = ptr.To(true)
	return c
}
