package machine

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// creates runs CreateMachine calls off the reconcile workers. A VM create
// can take minutes at a real provider; done inside a reconcile it would
// hold one of the few workers all that time, and a rollout wave of a
// hundred Machines would start ten VMs at a time. Instead the reconcile
// starts the call here and returns; when the call ends its result waits
// here and the Machine is enqueued again to pick it up.
//
// The calls run under a context of their own, not the reconcile's: that
// one ends with the reconcile (or at the manager's reconciliation
// timeout), long before a VM is made. Theirs ends only when the manager
// stops (see Start); each call is bounded by the driver call timeout.
//
// Nothing of this survives a restart, and need not: a Machine whose create
// was in flight is looked up with GetMachineStatus again, which finds the
// VM if the create went through, exactly as after a crash in the middle of
// a synchronous call.
type creates struct {
	// slots bounds the calls running at once (the rest wait their turn in
	// their goroutine, which costs a few KiB each).
	slots chan struct{}
	// wake enqueues a Machine whose call ended (a source of the controller).
	wake chan event.GenericEvent
	// ctx is the calls' context, cancelled by stop.
	ctx  context.Context
	stop context.CancelFunc

	mu    sync.Mutex
	calls map[types.UID]*createCall
}

// createCall is one CreateMachine call; resp and err are set once done.
type createCall struct {
	done bool
	// abandoned: the Machine went away while the call ran; its result is
	// dropped when it ends (the orphan collection deletes a VM it made).
	abandoned bool
	resp      *driver.CreateMachineResponse
	err       error
	// secret is what the call was made with: the InitializeMachine that
	// follows a create takes it too, instead of reading the class's
	// Secret from the API server again.
	secret *corev1.Secret
	// from is the Machine's resourceVersion the call was started from,
	// as the API server had it (see createsFromCurrent, fromCache).
	from string
}

func newCreates(concurrency int) *creates {
	ctx, stop := context.WithCancel(context.Background())
	return &creates{
		slots: make(chan struct{}, max(concurrency, 1)),
		wake:  make(chan event.GenericEvent, 1024),
		ctx:   ctx,
		stop:  stop,
		calls: map[types.UID]*createCall{},
	}
}

// Start is a manager Runnable: it cancels the calls still running when the
// manager stops.
func (c *creates) Start(ctx context.Context) error {
	<-ctx.Done()
	c.stop()
	return nil
}

// start runs call for m unless one is known for it already, and reports
// whether it did. m must be a copy nobody mutates: the call reads it while
// the reconcile goes on. reconcileCtx only lends the call its logger: the
// call outlives the reconcile. ended, if not nil, is called when the call
// has ended (or will never be made), before m is enqueued again.
func (c *creates) start(reconcileCtx context.Context, m *v1alpha1.Machine, secret *corev1.Secret, call func(context.Context) (*driver.CreateMachineResponse, error), ended func()) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.calls[m.UID]; ok {
		return false
	}
	cc := &createCall{secret: secret, from: m.ResourceVersion}
	c.calls[m.UID] = cc
	ctx := log.IntoContext(c.ctx, log.FromContext(reconcileCtx))
	go func() {
		resp, err := c.run(ctx, call)
		if ended != nil {
			ended()
		}
		c.mu.Lock()
		cc.done, cc.resp, cc.err = true, resp, err
		abandoned := cc.abandoned
		if abandoned {
			delete(c.calls, m.UID)
		}
		c.mu.Unlock()
		if abandoned {
			return
		}
		select {
		case c.wake <- event.GenericEvent{Object: m}:
		case <-ctx.Done():
		}
	}()
	return true
}

// run makes the call once it has a slot, and gives the slot back on every
// path: a slot taken just as ctx ends is released, not kept forever.
func (c *creates) run(ctx context.Context, call func(context.Context) (*driver.CreateMachineResponse, error)) (*driver.CreateMachineResponse, error) {
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.slots }()
	if err := ctx.Err(); err != nil {
		return nil, err // both were ready and select took the slot
	}
	return call(ctx)
}

// inFlight reports whether a create for the Machine is running or waiting
// for a slot.
func (c *creates) inFlight(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc, ok := c.calls[uid]
	return ok && !cc.done
}

// known reports whether a create of the Machine was started by this
// process and not yet forgotten (running, waiting for a slot, or done).
func (c *creates) known(uid types.UID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.calls[uid]
	return ok
}

// result returns the result of the Machine's finished create; ok is false
// when no finished create is known. The result stays until forget: it is
// only safe to drop once the Machine's status records it, since a status
// write that fails must be redone from it.
func (c *creates) result(uid types.UID) (resp *driver.CreateMachineResponse, err error, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc, known := c.calls[uid]
	if !known || !cc.done {
		return nil, nil, false
	}
	return cc.resp, cc.err, true
}

// startedFrom reports whether the Machine's known create was started
// from the version resourceVersion: a reconcile that reads that version
// from the cache after the call ended reads what the create was decided
// on, and nothing newer the cache has seen.
func (c *creates) startedFrom(uid types.UID, resourceVersion string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cc, ok := c.calls[uid]
	return ok && resourceVersion != "" && cc.from == resourceVersion
}

// secret returns the Secret the Machine's known create was made with, nil
// if none.
func (c *creates) secret(uid types.UID) *corev1.Secret {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cc, ok := c.calls[uid]; ok {
		return cc.secret
	}
	return nil
}

// forget drops the finished create of a Machine whose status now records
// it, or that is gone. A call still running stays known until it ends, so
// that it is never started twice.
func (c *creates) forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch cc, ok := c.calls[uid]; {
	case !ok:
	case cc.done:
		delete(c.calls, uid)
	default:
		cc.abandoned = true
	}
}

// createsFromCurrent reports whether s read the Machine as the API server
// has it now. A create decided from a cache behind this controller's own
// last write (a providerID just recorded, a failure just counted) could
// make a second VM where a cloud does not list its new VM at once; a read
// of the Machine costs no write, unlike the status write that used to
// catch this as a Conflict (see driverInfra.create). An in-place update's
// UpdateMachine is guarded the same way (inPlaceDriver).
func (r *Reconciler) createsFromCurrent(ctx context.Context, s *scope) (bool, error) {
	live := &v1alpha1.Machine{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(s.machine), live); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	if live.ResourceVersion != s.machine.ResourceVersion {
		s.log.V(1).Info("the cache is behind the Machine; deciding its create again")
		return false, nil
	}
	return true, nil
}
