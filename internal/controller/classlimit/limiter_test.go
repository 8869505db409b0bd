package classlimit_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/millwright-dev/millwright/internal/controller/classlimit"
)

var class = types.NamespacedName{Namespace: "ns", Name: "small"}

func machine(i int) (types.NamespacedName, types.UID) {
	name := string(rune('a' + i))
	return types.NamespacedName{Namespace: "ns", Name: name}, types.UID("uid-" + name)
}

// Two slots: the third Machine is queued, counted, and woken (first in
// line first) when a slot is given back; it then gets the slot.
func TestQueuedMachineIsWokenBySlotGivenBack(t *testing.T) {
	l := classlimit.New()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Start(ctx) }()
	limit := ptr.To[int32](2)
	for i := range 4 {
		m, uid := machine(i)
		ok, inFlight := l.Acquire(classlimit.Create, class, limit, m, uid)
		if want := i < 2; ok != want {
			t.Fatalf("Machine %d: slot %v, want %v (in flight %d)", i, ok, want, inFlight)
		}
	}
	if got, want := l.Counts(class), (classlimit.Counts{CreatesInFlight: 2, CreatesQueued: 2}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	c, _ := machine(2)
	if !l.Full(classlimit.Create, class, limit, c) {
		t.Fatal("a queued Machine of a full class is not told so")
	}
	_, first := machine(0)
	l.Release(classlimit.Create, class, first)
	woken := <-l.Wake()
	if woken.Object.GetName() != c.Name {
		t.Fatalf("woke %s, want %s (queued first)", woken.Object.GetName(), c.Name)
	}
	if l.Full(classlimit.Create, class, limit, c) {
		t.Fatal("a slot is free but the queued Machine is told the class is full")
	}
	_, cuid := machine(2)
	if ok, _ := l.Acquire(classlimit.Create, class, limit, c, cuid); !ok {
		t.Fatal("the woken Machine did not get the free slot")
	}
	d, _ := machine(3)
	l.Leave(classlimit.Create, d)
	if got, want := l.Counts(class), (classlimit.Counts{CreatesInFlight: 2}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
}

// Without a limit every call gets a slot and is counted; deletes are
// counted apart from creates.
func TestUnlimitedClassIsCounted(t *testing.T) {
	l := classlimit.New()
	for i := range 3 {
		m, uid := machine(i)
		if ok, _ := l.Acquire(classlimit.Delete, class, nil, m, uid); !ok {
			t.Fatalf("Machine %d refused without a limit", i)
		}
	}
	if got, want := l.Counts(class), (classlimit.Counts{DeletesInFlight: 3}); got != want {
		t.Fatalf("counts %+v, want %+v", got, want)
	}
	for i := range 3 {
		_, uid := machine(i)
		l.Release(classlimit.Delete, class, uid)
	}
	if got := l.Counts(class); got != (classlimit.Counts{}) {
		t.Fatalf("counts %+v after every slot was given back, want none", got)
	}
}

// A queued Machine taking the free slot wakes nobody else: there is no
// slot left for them.
func TestTakingTheSlotWakesNoOther(t *testing.T) {
	l := classlimit.New()
	limit := ptr.To[int32](1)
	for i := range 3 {
		m, uid := machine(i)
		l.Acquire(classlimit.Create, class, limit, m, uid)
	}
	_, first := machine(0)
	l.Release(classlimit.Create, class, first) // wakes b
	b, buid := machine(1)
	if ok, _ := l.Acquire(classlimit.Create, class, limit, b, buid); !ok {
		t.Fatal("the Machine queued first did not get the free slot")
	}
	// A wake in another class after it marks the end of what b's taking
	// the slot woke: the wakes are sent in the order they were made.
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	x, xuid := machine(10)
	y, yuid := machine(11)
	l.Acquire(classlimit.Create, other, limit, x, xuid)
	l.Acquire(classlimit.Create, other, limit, y, yuid)
	l.Release(classlimit.Create, other, xuid)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Start(ctx) }()
	for _, want := range []string{b.Name, y.Name} {
		if woken := <-l.Wake(); woken.Object.GetName() != want {
			t.Fatalf("woke %s, want %s: no slot of class small was free once %s took it", woken.Object.GetName(), want, b.Name)
		}
	}
}

// A raised limit wakes as many queued Machines as it leaves room for, the
// longest queued first, without waiting for a slot to be given back.
func TestRaisedLimitWakesQueuedMachines(t *testing.T) {
	l := classlimit.New()
	for i := range 5 {
		m, uid := machine(i)
		l.Acquire(classlimit.Create, class, ptr.To[int32](1), m, uid)
	}
	l.SetLimits(class, ptr.To[int32](3), nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = l.Start(ctx) }()
	for _, i := range []int{1, 2} {
		want, _ := machine(i)
		if woken := nextWake(t, l); woken != want.Name {
			t.Fatalf("woke %s, want %s", woken, want.Name)
		}
	}
	// Nothing more: the third wake would be a slot the limit does not
	// have. A later release in another class is the next wake.
	other := types.NamespacedName{Namespace: "ns", Name: "other"}
	x, xuid := machine(10)
	y, yuid := machine(11)
	l.Acquire(classlimit.Create, other, ptr.To[int32](1), x, xuid)
	l.Acquire(classlimit.Create, other, ptr.To[int32](1), y, yuid)
	l.Release(classlimit.Create, other, xuid)
	if woken := nextWake(t, l); woken != y.Name {
		t.Fatalf("woke %s, want %s: the raised limit left room for two Machines only", woken, y.Name)
	}
}

// nextWake is the name of the next Machine woken, failing the test when
// none is woken within a generous bound (a wake missed, not a slow one).
func nextWake(t *testing.T, l *classlimit.Limiter) string {
	t.Helper()
	select {
	case woken := <-l.Wake():
		return woken.Object.GetName()
	case <-time.After(10 * time.Second):
		t.Fatal("no Machine woken")
		return ""
	}
}
