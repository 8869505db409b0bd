package machine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// liveReads counts the machine controller's reads that go to the API
// server instead of its cache (its APIReader and TargetAPI), by kind and
// name, from the moment it is armed.
type liveReads struct {
	mu    sync.Mutex
	armed bool
	gets  map[string]int
}

func (l *liveReads) arm() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.armed, l.gets = true, map[string]int{}
}

func (l *liveReads) of(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.gets[key]
}

func (l *liveReads) count(obj client.Object, name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.armed {
		return
	}
	switch obj.(type) {
	case *v1alpha1.Machine:
		l.gets["Machine "+name]++
	case *corev1.Node:
		l.gets["Node "+name]++
	}
}

func (l *liveReads) wrap(r *machine.Reconciler) {
	r.APIReader = countingReader{Reader: r.APIReader, l: l}
	r.TargetAPI = countingTarget{Client: r.TargetAPI, l: l}
}

type countingReader struct {
	client.Reader
	l *liveReads
}

func (c countingReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.l.count(obj, key.Name)
	return c.Reader.Get(ctx, key, obj, opts...)
}

type countingTarget struct {
	client.Client
	l *liveReads
}

func (c countingTarget) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	c.l.count(obj, key.Name)
	return c.Client.Get(ctx, key, obj, opts...)
}

// A routine create reads its Machine from the API server once, before the
// create (a cache behind the controller's own last write must not start a
// second VM), and not again when the create has ended: the cache shows the
// version the create started from. A routine deletion reads its Node
// from the cache only: the cordon is made from the cache's copy.
func TestRoutineMachineReadsFromTheCache(t *testing.T) {
	var l liveReads
	h := controllertest.New(t, controllertest.Options{Machine: l.wrap})
	h.Class("small", simSpec)
	l.arm()
	h.Machine("m", "small", nil)
	m := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	if n := l.of("Machine " + h.Prefix + "m"); n != 1 {
		t.Errorf("the Machine was read %d times from the API server on its way to Running, want 1 (before its create)", n)
	}
	node := m.Status.NodeRef.Name
	l.arm()
	h.DeleteMachine("m")
	h.WaitGone("m")
	if n := l.of("Node " + node); n != 0 {
		t.Errorf("its Node was read %d times from the API server during the deletion, want 0 (cordoned from the cache's copy)", n)
	}

}
