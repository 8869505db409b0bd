package e2e

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/sim"
)

// limitedSpec is a sim class whose creates and deletes take a second, so
// that calls overlap and a class's limit on them shows.
const limitedSpec = `{"region":"local","zones":["local-a","local-b"],"bootDelay":"1s",` +
	`"faults":{"create":{"latency":"1s"},"delete":{"latency":"1s"}}}`

// TestClassCreateLimit scales a MachineDeployment of a class limited to 5
// creates and 5 deletes at once from 0 to 50 and back to 0, with the
// manager's own limit far above (100): the sim never has more than 5
// calls of the class in flight (and has 5, so the limit is what held
// them), Machines waiting say they are queued, the class's status shows
// the queue, and everything converges.
func TestClassCreateLimit(t *testing.T) {
	const limit, replicas = 5, 50
	s := newScenario(t, "classlimit")
	s.startManager()
	rec := s.record()
	s.createClassWith("limited", limitedSpec, func(c *v1alpha1.MachineClass) {
		c.Spec.MaxConcurrentCreates, c.Spec.MaxConcurrentDeletes = ptr.To[int32](limit), ptr.To[int32](limit)
	})
	s.createDeployment(0, "limited", replicas, 0)
	status := s.watchClassStatus("limited")

	s.scale(replicas)
	s.waitFleet(replicas, "limited", 5*time.Minute)
	calls := s.callStats("limited")
	if calls.MaxCreates > limit {
		t.Errorf("the sim had %d creates of the class in flight at once, over its limit of %d", calls.MaxCreates, limit)
	}
	if calls.MaxCreates < limit {
		t.Errorf("the sim had at most %d creates in flight: the scale-up never reached the limit of %d, so it proves nothing", calls.MaxCreates, limit)
	}
	var queued int
	for _, name := range rec.machineNames() {
		for _, v := range rec.versionsOf(name) {
			if strings.HasPrefix(v.op.Description, "queued: ") {
				queued++
				break
			}
		}
	}
	if queued == 0 {
		t.Errorf("no Machine ever said it was queued (lastOperation), though %d waited for %d slots", replicas, limit)
	}

	s.scale(0)
	s.waitFleet(0, "limited", 5*time.Minute)
	calls = s.callStats("limited")
	if calls.MaxDeletes > limit || calls.MaxDeletes < 1 {
		t.Errorf("the sim had at most %d deletes of the class in flight at once, want 1 to %d", calls.MaxDeletes, limit)
	}
	s.eventually(time.Minute, "the class's status to show no call in flight or queued", func() (bool, error) {
		c := &v1alpha1.MachineClass{}
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "limited"}, c)
		st := c.Status
		return err == nil && st.CreatesInFlight+st.CreatesQueued+st.DeletesInFlight+st.DeletesQueued == 0, err
	})
	seen := status.stop()
	if seen.CreatesInFlight > limit || seen.CreatesQueued == 0 {
		t.Errorf("the class's status showed at most %d creates in flight and %d queued; want at most %d, and some queued",
			seen.CreatesInFlight, seen.CreatesQueued, limit)
	}
	t.Logf("class limited to %d: the sim saw at most %d creates and %d deletes at once; %d Machines said they were queued; the class's status showed at most %d in flight and %d queued",
		limit, calls.MaxCreates, calls.MaxDeletes, queued, seen.CreatesInFlight, seen.CreatesQueued)
	rec.verify()
	s.checkNoDuplicateVMs()
}

// callStats reads the sim's count of the class's calls in flight.
func (s *scenario) callStats(class string) sim.CallStats {
	s.t.Helper()
	var out sim.CallStats
	if err := s.simGet("/calls?namespace="+s.ns+"&class="+class, &out); err != nil {
		s.t.Fatalf("reading the sim's call counts: %v", err)
	}
	return out
}

// classStatusWatch keeps the highest counts a class's status showed.
type classStatusWatch struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	most   v1alpha1.MachineClassStatus
}

// watchClassStatus watches the class's status until stop.
func (s *scenario) watchClassStatus(class string) *classStatusWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &classStatusWatch{cancel: cancel}
	list := &v1alpha1.MachineClassList{}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		watcher, err := k8s.Watch(ctx, list, client.InNamespace(s.ns))
		if err != nil {
			s.t.Errorf("watching classes: %v", err)
			return
		}
		defer watcher.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case e, ok := <-watcher.ResultChan():
				if !ok {
					return
				}
				if c, ok := e.Object.(*v1alpha1.MachineClass); ok && c.Name == class {
					st := c.Status
					w.most.CreatesInFlight = max(w.most.CreatesInFlight, st.CreatesInFlight)
					w.most.CreatesQueued = max(w.most.CreatesQueued, st.CreatesQueued)
					w.most.DeletesInFlight = max(w.most.DeletesInFlight, st.DeletesInFlight)
					w.most.DeletesQueued = max(w.most.DeletesQueued, st.DeletesQueued)
				}
			}
		}
	}()
	return w
}

// stop ends the watch and returns the highest counts seen.
func (w *classStatusWatch) stop() v1alpha1.MachineClassStatus {
	w.cancel()
	w.done.Wait()
	return w.most
}
