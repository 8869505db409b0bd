package machine

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// A reconcile that reads the Machine from a cache not yet showing its last
// failure still waits out the backoff, and the next failure counts on from
// the last one instead of from one.
func TestRetryPacingSurvivesAStaleCache(t *testing.T) {
	r := &Reconciler{Config: DefaultConfig()}
	r.Config.BackoffBase, r.Config.BackoffCap = time.Second, time.Minute
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", UID: "uid-1"}}
	now := time.Now()
	unavailable := driver.Errorf(driver.Unavailable, "cloud down")

	// Three failures, each read from the same stale copy (no failure in status).
	var waits []time.Duration
	for i := range 3 {
		s := r.newScope(context.Background(), m.DeepCopy())
		s.now = now.Add(time.Duration(i) * time.Hour) // far apart: only the count matters here
		res := r.failed(s, v1alpha1.OperationCreate, driver.MethodCreateMachine, unavailable)
		if got := s.machine.Status.LastOperation.FailureCount; got != int32(i+1) {
			t.Fatalf("failure %d counted as %d", i+1, got)
		}
		waits = append(waits, res.RequeueAfter)
	}
	if !(waits[2] > waits[0]) {
		t.Fatalf("backoff did not grow: %v", waits)
	}

	// Right after the last failure, a stale read must wait, not retry.
	s := r.newScope(context.Background(), m.DeepCopy())
	s.now = now.Add(2 * time.Hour)
	if w := r.retryWait(s); w <= 0 {
		t.Fatalf("retryWait %s on a stale copy right after a failure; want the backoff", w)
	}

	// Success clears the memory.
	s.operation(v1alpha1.OperationCreate, v1alpha1.OperationSucceeded, "", "created")
	if w := r.retryWait(r.newScope(context.Background(), m.DeepCopy())); w != 0 {
		t.Fatalf("retryWait %s after success", w)
	}
}
