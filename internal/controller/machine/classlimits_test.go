package machine_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/controller/machineclass"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// heldCalls counts the driver calls of one kind in flight and holds each
// until released.
type heldCalls struct {
	mu       sync.Mutex
	inFlight int
	max      int
	released chan struct{}
}

func newHeldCalls() *heldCalls { return &heldCalls{released: make(chan struct{})} }

// hold counts a call in flight until release, then makes it.
func (h *heldCalls) hold(ctx context.Context) error {
	h.mu.Lock()
	h.inFlight++
	h.max = max(h.max, h.inFlight)
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.inFlight--
		h.mu.Unlock()
	}()
	select {
	case <-h.released:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (h *heldCalls) counts() (inFlight, most int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.inFlight, h.max
}

// holdingDriver is the sim with its creates and deletes held.
type holdingDriver struct {
	driver.Driver
	creates, deletes *heldCalls
}

func (d holdingDriver) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	if err := d.creates.hold(ctx); err != nil {
		return nil, driver.Errorf(driver.DeadlineExceeded, "%v", err)
	}
	return d.Driver.CreateMachine(ctx, req)
}

func (d holdingDriver) DeleteMachine(ctx context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	if err := d.deletes.hold(ctx); err != nil {
		return nil, driver.Errorf(driver.DeadlineExceeded, "%v", err)
	}
	return d.Driver.DeleteMachine(ctx, req)
}

// newLimitedHarness runs the machine controller with the holding driver
// and the class controller publishing the shared limiter's counts.
func newLimitedHarness(t *testing.T) (*controllertest.Harness, holdingDriver) {
	d := holdingDriver{creates: newHeldCalls(), deletes: newHeldCalls()}
	limits := classlimit.New()
	h := controllertest.New(t, controllertest.Options{
		Config: func(c *machine.Config) { c.DriverCallTimeout = 2 * time.Hour },
		Machine: func(r *machine.Reconciler) {
			d.Driver = r.Drivers["sim"]
			r.Drivers["sim"] = d
			r.Limits = limits
		},
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			return (&machineclass.Reconciler{
				Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
				Providers: func(string) bool { return true }, Provisioning: limits,
			}).SetupWithManager(ctx, mgr, 1)
		},
	})
	return h, d
}

// limitedClass makes a sim class bounded to two creates and two deletes.
func limitedClass(h *controllertest.Harness, name string) {
	c := h.Class(name, simSpec)
	patch := client.MergeFrom(c.DeepCopy())
	two := int32(2)
	c.Spec.MaxConcurrentCreates, c.Spec.MaxConcurrentDeletes = &two, &two
	if err := controllertest.Env.Client.Patch(context.Background(), c, patch); err != nil {
		h.T.Fatal(err)
	}
}

// queued lists the Machines whose lastOperation says they wait for a slot
// of op.
func queued(h *controllertest.Harness, names []string, op string) []string {
	var out []string
	for _, n := range names {
		if d := h.Get(n).Status.LastOperation.Description; strings.HasPrefix(d, "queued: 2 of 2 "+op+" of class limited") {
			out = append(out, n)
		}
	}
	return out
}

func classCounts(h *controllertest.Harness) v1alpha1.MachineClassStatus {
	c := &v1alpha1.MachineClass{}
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: "limited"}, c); err != nil {
		h.T.Fatal(err)
	}
	return c.Status
}

// Six Machines of a class limited to two creates and two deletes at once,
// from different owners: never more than two calls in flight, the others
// say they are queued and the class's status counts them, and all finish
// once the calls are let through.
func TestClassLimitsCreatesAndDeletesInFlight(t *testing.T) {
	h, d := newLimitedHarness(t)
	limitedClass(h, "limited")
	var names []string
	for i := range 6 {
		name := fmt.Sprintf("m%d", i)
		names = append(names, name)
		h.Machine(name, "limited", func(m *v1alpha1.Machine) {
			m.Labels = map[string]string{"owner": fmt.Sprintf("set-%d", i%2)}
		})
	}
	h.Eventually(60*time.Second, "two creates in flight and four Machines queued", func() (bool, error) {
		if _, most := d.creates.counts(); most > 2 {
			return false, fmt.Errorf("%d creates in flight at once over a limit of 2", most)
		}
		inFlight, _ := d.creates.counts()
		return inFlight == 2 && len(queued(h, names, "creates")) == 4, nil
	})
	h.Eventually(30*time.Second, "the class's status to count them", func() (bool, error) {
		st := classCounts(h)
		return st.CreatesInFlight == 2 && st.CreatesQueued == 4, nil
	})
	close(d.creates.released)
	for _, n := range names {
		h.WaitPhase(n, v1alpha1.PhaseRunning, 60*time.Second)
	}
	if _, most := d.creates.counts(); most != 2 {
		t.Fatalf("at most %d creates were in flight at once, want 2 (the class's limit)", most)
	}

	for _, n := range names {
		h.DeleteMachine(n)
	}
	h.Eventually(60*time.Second, "two deletes in flight and four Machines queued", func() (bool, error) {
		if _, most := d.deletes.counts(); most > 2 {
			return false, fmt.Errorf("%d deletes in flight at once over a limit of 2", most)
		}
		inFlight, _ := d.deletes.counts()
		return inFlight == 2 && len(queued(h, names, "deletes")) == 4, nil
	})
	h.Eventually(30*time.Second, "the class's status to count them", func() (bool, error) {
		st := classCounts(h)
		return st.DeletesInFlight == 2 && st.DeletesQueued == 4 && st.CreatesInFlight == 0 && st.CreatesQueued == 0, nil
	})
	close(d.deletes.released)
	for _, n := range names {
		h.WaitGone(n)
	}
	if _, most := d.deletes.counts(); most != 2 {
		t.Fatalf("at most %d deletes were in flight at once, want 2 (the class's limit)", most)
	}
	h.Eventually(30*time.Second, "the class's status to count none", func() (bool, error) {
		st := classCounts(h)
		return st.CreatesInFlight+st.CreatesQueued+st.DeletesInFlight+st.DeletesQueued == 0, nil
	})
}

// A Machine queued for a create slot is not failed by its creation
// timeout while it waits: the timeout counts from the start of its create.
func TestQueuedMachineIsNotTimedOut(t *testing.T) {
	h, d := newLimitedHarness(t)
	c := h.Class("limited", simSpec)
	patch := client.MergeFrom(c.DeepCopy())
	one := int32(1)
	c.Spec.MaxConcurrentCreates = &one
	if err := controllertest.Env.Client.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
	h.Machine("first", "limited", nil)
	h.Eventually(30*time.Second, "the first Machine's create in flight", func() (bool, error) {
		inFlight, _ := d.creates.counts()
		return inFlight == 1, nil
	})
	const timeout = 6 * time.Second
	h.Machine("waiting", "limited", func(m *v1alpha1.Machine) {
		m.Spec.Lifecycle.CreationTimeout = &metav1.Duration{Duration: timeout}
	})
	h.Eventually(30*time.Second, "the second Machine to say it is queued", func() (bool, error) {
		m := h.Get("waiting")
		return meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.CreateQueuedCondition) &&
			strings.HasPrefix(m.Status.LastOperation.Description, "queued: 1 of 1 creates of class limited"), nil
	})
	h.Consistently(timeout+2*time.Second, "the queued Machine not to fail", func() (bool, error) {
		m := h.Get("waiting")
		return m.Status.FailureReason == "", nil
	})
	close(d.creates.released)
	m := h.WaitPhase("waiting", v1alpha1.PhaseRunning, 30*time.Second)
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.CreateQueuedCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Fatalf("CreateQueued %+v once the create started, want False", c)
	}
	h.WaitPhase("first", v1alpha1.PhaseRunning, 30*time.Second)
}
