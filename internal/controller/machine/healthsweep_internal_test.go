package machine

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// One round of the health sweep enqueues each Running or Unknown Machine
// once, spread over the round's slices, and never a Machine that asks for
// its own next look: one on its way to Running, Failed, or being deleted.
func TestHealthSweepEnqueuesEachMachineOnceARound(t *testing.T) {
	ready := []metav1.Condition{{Type: v1alpha1.ReadyCondition, Status: metav1.ConditionTrue}}
	var machines []*v1alpha1.Machine
	want := map[string]bool{}
	for i := range 300 {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("m-%d", i), UID: types.UID(fmt.Sprintf("uid-%d", i))}}
		switch i % 6 {
		case 0, 1: // Running
			m.Status.Conditions = ready
			want[m.Name] = true
		case 2: // Unknown: its Node went away
			m.Status.UnhealthySince = &metav1.Time{Time: time.Unix(0, 0)}
			want[m.Name] = true
		case 3: // Provisioned: asks for its own look at the VM
		case 4: // Running, but being deleted
			m.Status.Conditions = ready
			m.DeletionTimestamp = &metav1.Time{Time: time.Unix(0, 0)}
			m.Finalizers = []string{v1alpha1.MachineFinalizer}
		case 5: // Failed
			m.Status.Conditions = ready
			m.Status.FailureReason = FailureHealthTimeout
		}
		machines = append(machines, m)
	}
	h := healthSweep{every: 10 * time.Minute, machines: func(context.Context) ([]*v1alpha1.Machine, error) { return machines, nil }}
	tick, n := h.slices()
	if tick != sweepTick || n != 60 {
		t.Fatalf("a round of 10m: %d slices of %s, want 60 of %s", n, tick, sweepTick)
	}

	seen := map[string]int{}
	busiest := 0
	for slice := range n {
		q := workqueue.NewTyped[reconcile.Request]()
		if err := h.enqueue(t.Context(), q, slice, n); err != nil {
			t.Fatal(err)
		}
		busiest = max(busiest, q.Len())
		for q.Len() > 0 {
			req, _ := q.Get()
			seen[req.Name]++
			q.Done(req)
		}
		q.ShutDown()
	}
	for name := range want {
		if seen[name] != 1 {
			t.Errorf("Machine %s enqueued %d times in a round, want once", name, seen[name])
		}
	}
	for name, times := range seen {
		if !want[name] {
			t.Errorf("Machine %s enqueued %d times: it asks for its own next look", name, times)
		}
	}
	// 150 Machines over 60 slices: spread, not all in one tick.
	if busiest > 15 {
		t.Errorf("one slice enqueued %d of %d Machines: the round is not spread", busiest, len(want))
	}
}

// A resync shorter than the tick is one slice, every resync.
func TestHealthSweepShortResyncIsOneSlice(t *testing.T) {
	tick, n := healthSweep{every: 5 * time.Second}.slices()
	if tick != 5*time.Second || n != 1 {
		t.Fatalf("a round of 5s: %d slices of %s, want 1 of 5s", n, tick)
	}
}
