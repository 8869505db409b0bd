package changed_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
)

type changedQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// TestSetCountsHandler drives the counts' watch: each event is counted
// before it is handed on, so a reconcile it wakes reads counts with it;
// a Machine another kind controls, or one the rule does not count, is
// not counted; a set with nothing left is dropped.
func TestSetCountsHandler(t *testing.T) {
	c := changed.NewSetCounts(func(m *v1alpha1.Machine) bool { return m.DeletionTimestamp.IsZero() },
		func(names []string, m *v1alpha1.Machine) []string { return append(names, m.Name) },
		func(names []string, m *v1alpha1.Machine) ([]string, bool) {
			names = slices.DeleteFunc(names, func(n string) bool { return n == m.Name })
			return names, len(names) == 0
		})
	kept := func(uid types.UID) []string {
		var names []string
		c.Read(uid, func(v []string) { names = v })
		return names
	}
	read := func(uid types.UID) int { return len(kept(uid)) }
	var woken []int
	wake := handler.Funcs{
		CreateFunc: func(context.Context, event.CreateEvent, changedQueue) { woken = append(woken, read("s")) },
		UpdateFunc: func(context.Context, event.UpdateEvent, changedQueue) { woken = append(woken, read("s")) },
		DeleteFunc: func(context.Context, event.DeleteEvent, changedQueue) { woken = append(woken, read("s")) },
	}
	h := c.Handler(wake)
	machine := func(name, kind string, deleting bool) *v1alpha1.Machine {
		yes := true
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, OwnerReferences: []metav1.OwnerReference{
			{Kind: kind, Name: "s", UID: "s", Controller: &yes}}}}
		if deleting {
			m.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)}
		}
		return m
	}
	ctx := context.Background()
	a, b := machine("a", "MachineSet", false), machine("b", "MachineSet", false)
	h.Create(ctx, event.CreateEvent{Object: a}, nil)
	h.Create(ctx, event.CreateEvent{Object: b}, nil)
	h.Create(ctx, event.CreateEvent{Object: machine("c", "Other", false)}, nil)
	h.Update(ctx, event.UpdateEvent{ObjectOld: b, ObjectNew: machine("b", "MachineSet", true)}, nil)
	h.Delete(ctx, event.DeleteEvent{Object: a}, nil)
	if want := []int{1, 2, 2, 1, 0}; !slices.Equal(woken, want) {
		t.Fatalf("counts seen by the woken reconciles %v, want %v", woken, want)
	}
	if kept("s") != nil {
		t.Errorf("a set with nothing left is still kept: %v", kept("s"))
	}
	c.Handler(nil).Create(ctx, event.CreateEvent{Object: a}, nil) // wakes nothing, counts
	if got := read("s"); got != 1 {
		t.Errorf("a watch that wakes nothing counted %d, want 1", got)
	}
}
