package machine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// statusWrites counts the Machine status writes of the machine controller,
// by Machine name, from the moment it is armed.
type statusWrites struct {
	mu     sync.Mutex
	armed  bool
	byName map[string][]string
}

func (w *statusWrites) arm() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed, w.byName = true, map[string][]string{}
}

func (w *statusWrites) of(name string) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.byName[name]...)
}

func (w *statusWrites) wrap(r *machine.Reconciler) {
	r.Client = countingClient{Client: r.Client, w: w}
}

// countingClient records the Machine status patches it sends.
type countingClient struct {
	client.Client
	w *statusWrites
}

func (c countingClient) Status() client.SubResourceWriter {
	return countingStatus{SubResourceWriter: c.Client.Status(), w: c.w}
}

type countingStatus struct {
	client.SubResourceWriter
	w *statusWrites
}

func (c countingStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	if m, ok := obj.(*v1alpha1.Machine); ok {
		data, _ := p.Data(obj)
		c.w.mu.Lock()
		if c.w.armed {
			c.w.byName[m.Name] = append(c.w.byName[m.Name], string(data))
		}
		c.w.mu.Unlock()
	}
	return c.SubResourceWriter.Patch(ctx, obj, p, opts...)
}

// A deletion with nothing to wait for (no pods to drain, no hooks) writes
// the Machine's status once: the record of the drain, before the VM and
// the Node go (docs/machine-phases.md). Every further write is a request
// of the client's rate limit a rolling update pays per replaced Machine.
func TestDeletionWritesStatusOnce(t *testing.T) {
	var w statusWrites
	h := controllertest.New(t, controllertest.Options{Machine: w.wrap})
	h.Class("small", simSpec)
	h.Machine("m", "small", nil)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	w.arm()
	h.DeleteMachine("m")
	h.WaitGone("m")
	name := h.Prefix + "m"
	if got := w.of(name); len(got) != 1 {
		t.Errorf("%d status writes during the deletion, want 1:\n%s", len(got), got)
	}
}
