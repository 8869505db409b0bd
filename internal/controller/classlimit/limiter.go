// Package classlimit bounds the driver calls in flight per MachineClass
// (spec.maxConcurrentCreates and spec.maxConcurrentDeletes) across all the
// Machines of a class, whatever MachineSet or MachineDeployment they belong
// to, and counts the calls in flight and the Machines queued for the
// class's status (docs/concepts.md, "Provisioning limits").
//
// The machine controller asks for a slot before it calls CreateMachine or
// DeleteMachine and gives it back when the call ends. A Machine refused a
// slot is queued: its reconcile requeues, and a slot given back wakes the
// Machines queued longest (Wake), so they do not wait for a periodic
// retry. Everything is in memory: after a restart the counts start from 0,
// which is right, since the calls in flight ended with the old process.
package classlimit

import (
	"cmp"
	"context"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Op is the kind of driver call a slot is for.
type Op int

// The calls a class bounds.
const (
	Create Op = iota
	Delete
)

func (o Op) String() string {
	if o == Delete {
		return "deletes"
	}
	return "creates"
}

// Limit is the class's bound for op, nil for none.
func Limit(class *v1alpha1.MachineClass, op Op) *int32 {
	if op == Delete {
		return class.Spec.MaxConcurrentDeletes
	}
	return class.Spec.MaxConcurrentCreates
}

// Counts is what the class's status shows.
type Counts struct {
	CreatesInFlight, CreatesQueued, DeletesInFlight, DeletesQueued int32
}

// key names one class's slots of one op.
type key struct {
	class types.NamespacedName
	op    Op
}

// slots are one class's calls of one op in flight, and the Machines
// waiting for one.
type slots struct {
	holders map[types.UID]struct{}
	// waiting are the queued Machines, by name, with their place in the
	// queue. By name: a Machine gone from the API server is only known by
	// it (see Leave).
	waiting map[types.NamespacedName]uint64
	// limit is the class's bound as last asked with; nil for none. A slot
	// given back wakes waiters only as far as the limit leaves room.
	limit *int32
}

// Limiter holds every class's slots. Its methods are safe for concurrent
// use. It is a manager Runnable (Start): its Wake and Changed events are
// sent from there, so that no caller blocks on a channel.
type Limiter struct {
	mu      sync.Mutex
	classes map[key]*slots
	// queuedIn is the class each waiting Machine waits in, per op: a
	// Machine waits for one class at a time.
	queuedIn map[Op]map[types.NamespacedName]key
	seq      uint64

	// pendingWake and pendingChange wait for the sender (Start).
	pendingWake   []types.NamespacedName
	pendingChange map[types.NamespacedName]struct{}
	kick          chan struct{}

	wake    chan event.GenericEvent
	changed chan event.GenericEvent
	// watched: Changed was asked for; without a reader the changes are
	// not sent (Start would block on them, and hold the wakes back).
	watched bool
}

// New makes an empty Limiter.
func New() *Limiter {
	return &Limiter{
		classes:       map[key]*slots{},
		queuedIn:      map[Op]map[types.NamespacedName]key{Create: {}, Delete: {}},
		pendingChange: map[types.NamespacedName]struct{}{},
		kick:          make(chan struct{}, 1),
		wake:          make(chan event.GenericEvent, 256),
		changed:       make(chan event.GenericEvent, 64),
	}
}

// Wake carries the queued Machines a slot given back lets try again (a
// source of the machine controller). Their objects hold only a name and
// namespace.
func (l *Limiter) Wake() <-chan event.GenericEvent { return l.wake }

// Changed carries the classes whose counts changed (a source of the class
// controller, which publishes them). Their objects hold only a name and
// namespace. Whoever calls it must read it for as long as Start runs.
func (l *Limiter) Changed() <-chan event.GenericEvent {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.watched = true
	return l.changed
}

// Acquire takes a slot of op for machine (uid) in class, bounded by limit
// (nil: no bound, the call is only counted). ok is false when the class's
// limit is reached: machine is queued, and woken when a slot is given
// back; inFlight is then the calls holding the slots. A Machine that
// holds a slot already gets it again.
func (l *Limiter) Acquire(op Op, class types.NamespacedName, limit *int32, machine types.NamespacedName, uid types.UID) (ok bool, inFlight int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := key{class, op}
	s := l.slotsLocked(k)
	s.limit = limit
	if _, held := s.holders[uid]; held {
		return true, len(s.holders)
	}
	if limit != nil && len(s.holders) >= int(*limit) {
		if _, queued := s.waiting[machine]; !queued {
			l.leaveLocked(op, machine) // its class changed: one queue at a time
			l.seq++
			s.waiting[machine] = l.seq
			l.queuedIn[op][machine] = k
			l.changedLocked(class)
		}
		return false, len(s.holders)
	}
	// Held first: leaving the queue must not wake another Machine for
	// the slot this one takes.
	s.holders[uid] = struct{}{}
	l.leaveLocked(op, machine)
	l.changedLocked(class)
	return true, len(s.holders)
}

// Full reports whether machine waits in class's queue for op and the
// class still has no slot free: its reconcile need not even look at its
// VM before it requeues.
func (l *Limiter) Full(op Op, class types.NamespacedName, limit *int32, machine types.NamespacedName) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.classes[key{class, op}]
	if s == nil || limit == nil {
		return false
	}
	_, queued := s.waiting[machine]
	return queued && len(s.holders) >= int(*limit)
}

// Release gives machine's slot of op in class back, and wakes the Machines
// queued longest, as many as the limit leaves room for.
func (l *Limiter) Release(op Op, class types.NamespacedName, uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	k := key{class, op}
	s := l.classes[k]
	if s == nil {
		return
	}
	if _, held := s.holders[uid]; !held {
		return
	}
	delete(s.holders, uid)
	l.changedLocked(class)
	l.wakeLocked(s)
	l.dropIfIdleLocked(k, s)
}

// SetLimits records class's limits as its spec now says (the class
// controller calls it when it sees the class): a raised limit, or one
// removed, wakes as many queued Machines as it leaves room for at once,
// rather than at their periodic retry. A class nobody holds or waits on
// is not recorded.
func (l *Limiter) SetLimits(class types.NamespacedName, creates, deletes *int32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for op, limit := range map[Op]*int32{Create: creates, Delete: deletes} {
		if s := l.classes[key{class, op}]; s != nil {
			s.limit = limit
			l.wakeLocked(s)
		}
	}
}

// Leave takes machine out of the queue of op, if it waits in one: its
// reconcile no longer asks for a slot (it is deleted, paused, failed, or
// its class's limit went, or it is gone). The queue it leaves may wake
// the next one.
func (l *Limiter) Leave(op Op, machine types.NamespacedName) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaveLocked(op, machine)
}

// Counts returns class's calls in flight and Machines queued.
func (l *Limiter) Counts(class types.NamespacedName) Counts {
	l.mu.Lock()
	defer l.mu.Unlock()
	var c Counts
	if s := l.classes[key{class, Create}]; s != nil {
		c.CreatesInFlight, c.CreatesQueued = int32(len(s.holders)), int32(len(s.waiting))
	}
	if s := l.classes[key{class, Delete}]; s != nil {
		c.DeletesInFlight, c.DeletesQueued = int32(len(s.holders)), int32(len(s.waiting))
	}
	return c
}

// Start sends the pending wakes and changes until ctx ends.
func (l *Limiter) Start(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-l.kick:
		}
		l.mu.Lock()
		wakes, changes := l.pendingWake, l.pendingChange
		l.pendingWake, l.pendingChange = nil, map[types.NamespacedName]struct{}{}
		l.mu.Unlock()
		for _, m := range wakes {
			o := &v1alpha1.Machine{}
			o.Namespace, o.Name = m.Namespace, m.Name
			if !send(ctx, l.wake, o) {
				return nil
			}
		}
		for c := range changes {
			o := &v1alpha1.MachineClass{}
			o.Namespace, o.Name = c.Namespace, c.Name
			if !send(ctx, l.changed, o) {
				return nil
			}
		}
	}
}

// send sends an event for o, unless ctx ends first.
func send(ctx context.Context, ch chan event.GenericEvent, o client.Object) bool {
	select {
	case ch <- event.GenericEvent{Object: o}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (l *Limiter) slotsLocked(k key) *slots {
	s := l.classes[k]
	if s == nil {
		s = &slots{holders: map[types.UID]struct{}{}, waiting: map[types.NamespacedName]uint64{}}
		l.classes[k] = s
	}
	return s
}

func (l *Limiter) leaveLocked(op Op, machine types.NamespacedName) {
	k, queued := l.queuedIn[op][machine]
	if !queued {
		return
	}
	delete(l.queuedIn[op], machine)
	s := l.classes[k]
	delete(s.waiting, machine)
	l.changedLocked(k.class)
	l.wakeLocked(s) // it may have been woken for a slot it now leaves
	l.dropIfIdleLocked(k, s)
}

// wakeLocked wakes the longest-queued Machines of s, as many as there are
// free slots. A woken Machine stays queued until its reconcile takes the
// slot (or leaves): if another Machine took the slot first, it is woken
// again by the next slot given back.
func (l *Limiter) wakeLocked(s *slots) {
	free := len(s.waiting)
	if s.limit != nil {
		free = min(free, int(*s.limit)-len(s.holders))
	}
	if free <= 0 {
		return
	}
	l.pendingWake = append(l.pendingWake, longestQueued(s.waiting, free)...)
	l.kickLocked()
}

func (l *Limiter) changedLocked(class types.NamespacedName) {
	if !l.watched {
		return
	}
	l.pendingChange[class] = struct{}{}
	l.kickLocked()
}

func (l *Limiter) kickLocked() {
	select {
	case l.kick <- struct{}{}:
	default: // a kick is pending: Start takes everything pending
	}
}

// dropIfIdleLocked forgets a class's slots when nothing holds or waits:
// classes come and go.
func (l *Limiter) dropIfIdleLocked(k key, s *slots) {
	if len(s.holders) == 0 && len(s.waiting) == 0 {
		delete(l.classes, k)
	}
}

// longestQueued returns the n Machines of waiting queued first. One is the
// usual case (one slot given back): a scan, not a sort.
func longestQueued(waiting map[types.NamespacedName]uint64, n int) []types.NamespacedName {
	if n == 1 {
		var first types.NamespacedName
		best := uint64(0)
		for m, seq := range waiting {
			if best == 0 || seq < best {
				first, best = m, seq
			}
		}
		return []types.NamespacedName{first}
	}
	all := make([]types.NamespacedName, 0, len(waiting))
	for m := range waiting {
		all = append(all, m)
	}
	slices.SortFunc(all, func(a, b types.NamespacedName) int { return cmp.Compare(waiting[a], waiting[b]) })
	return all[:n]
}
