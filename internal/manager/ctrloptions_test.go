package manager

import (
	"testing"

	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"k8s.io/apimachinery/pkg/runtime"
)

// TestManagerAvoidsThePriorityQueue: controller-runtime v0.24's priority
// queue can deadlock a stopping controller (see internal/ctrlconfig), which
// the test harness saw as a manager not stopping within its grace period.
func TestManagerAvoidsThePriorityQueue(t *testing.T) {
	opts := NewOptions().managerOptions(runtime.NewScheme(), &ownerindex.Views{}, nil)
	if q := opts.Controller.UsePriorityQueue; q == nil || *q {
		t.Fatalf("the manager's controllers use controller-runtime's priority queue (UsePriorityQueue %v); it can deadlock on shutdown", q)
	}
}
