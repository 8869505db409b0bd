// Package changed keeps, for each object a controller reconciles, what
// its last reconcile made of the objects it reads (a set's counts of its
// Machines, a health check's verdicts) and the names of those objects
// whose events arrived since. A reconcile takes both, reads only the
// named objects again, and keeps what it made for the next one: the work
// of one event does not grow with the number of objects.
//
// The watch that wakes a reconcile is the store's own handler (Handler),
// which records the name before it enqueues: a reconcile woken by an
// event always finds the name here. A reconcile reads each named object
// from the cache, not from the event: the informer writes its store
// before it hands an event on, so an event may arrive after a reconcile
// read a newer version, and applied as it came it would take the object
// back to an older state. Read from the cache, an object is never older
// than its last read.
package changed

import (
	"context"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Store keeps, per reconciled object (its key), a T between reconciles
// and the names of the read objects that changed since.
type Store[T any] struct {
	mu    sync.Mutex
	kept  map[types.NamespacedName]T
	names map[types.NamespacedName]map[string]bool
}

// Note records that the object name, read by key's reconcile, changed.
func (s *Store[T]) Note(key types.NamespacedName, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.names == nil {
		s.names = map[types.NamespacedName]map[string]bool{}
	}
	if s.names[key] == nil {
		s.names[key] = map[string]bool{}
	}
	s.names[key][name] = true
}

// Take hands key's T (the zero value when none is kept) and the names
// changed since it was kept to key's reconcile, which keeps its T again
// once it is up to date (Keep); later names wait for the next reconcile.
func (s *Store[T]) Take(key types.NamespacedName) (T, map[string]bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, names := s.kept[key], s.names[key]
	delete(s.kept, key)
	delete(s.names, key)
	return v, names
}

// Keep keeps v for key until its next reconcile.
func (s *Store[T]) Keep(key types.NamespacedName, v T) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.kept == nil {
		s.kept = map[types.NamespacedName]T{}
	}
	s.kept[key] = v
}

// Edit calls f with key's kept T, and reports whether one is kept:
// tests date a kept T back with it. A reconcile that reads its T after
// keeping it races with Edit: it reads what it needs before Keep.
func (s *Store[T]) Edit(key types.NamespacedName, f func(T)) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kept[key]
	if ok {
		f(v)
	}
	return ok
}

// Forget drops a reconciled object that is gone.
func (s *Store[T]) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.kept, key)
	delete(s.names, key)
}

// Handler is the watch of the read objects of type O: each event is
// noted, under the name name gives its object (the object's own, or the
// one it stands for: a Node for its Machine), for each reconcile toKeys
// maps it to (of the object before and after an update: an object
// leaving a reconcile's concern concerns it too), which it then wakes.
// A name of "" is not noted, and its keys are not woken.
func Handler[T any, O client.Object](s *Store[T], toKeys func(context.Context, O) []reconcile.Request,
	name func(O) string) handler.TypedEventHandler[O, reconcile.Request] {
	return noting[T, O]{s: s, toKeys: toKeys, name: name}
}

type noting[T any, O client.Object] struct {
	s      *Store[T]
	toKeys func(context.Context, O) []reconcile.Request
	name   func(O) string
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h noting[T, O]) Create(ctx context.Context, e event.TypedCreateEvent[O], q queue) {
	h.noted(ctx, q, e.Object)
}

func (h noting[T, O]) Update(ctx context.Context, e event.TypedUpdateEvent[O], q queue) {
	h.noted(ctx, q, e.ObjectOld, e.ObjectNew)
}

func (h noting[T, O]) Delete(ctx context.Context, e event.TypedDeleteEvent[O], q queue) {
	h.noted(ctx, q, e.Object)
}

func (h noting[T, O]) Generic(ctx context.Context, e event.TypedGenericEvent[O], q queue) {
	h.noted(ctx, q, e.Object)
}

// noted notes each version under the keys it maps to, and wakes them.
// Two versions may stand for two names (a Node's annotation naming
// another Machine): each is noted.
func (h noting[T, O]) noted(ctx context.Context, q queue, versions ...O) {
	type noteKey struct {
		req  reconcile.Request
		name string
	}
	seen := map[noteKey]bool{}
	for _, o := range versions {
		name := h.name(o)
		if name == "" {
			continue
		}
		for _, req := range h.toKeys(ctx, o) {
			if seen[noteKey{req, name}] {
				continue
			}
			seen[noteKey{req, name}] = true
			h.s.Note(req.NamespacedName, name)
			q.Add(req)
		}
	}
}

// Name is the name function of a watch whose objects stand for
// themselves.
func Name[O client.Object](o O) string { return o.GetName() }
