package machine_test

import (
	"context"
	"strings"
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

// countingClient records the Machine status patches it sends, and under
// "object" the other Machine patches (metadata and spec).
type countingClient struct {
	client.Client
	w *statusWrites
}

func (c countingClient) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	if _, ok := obj.(*v1alpha1.Machine); ok {
		data, _ := p.Data(obj)
		c.w.mu.Lock()
		if c.w.armed {
			c.w.byName[objectWrites] = append(c.w.byName[objectWrites], string(data))
		}
		c.w.mu.Unlock()
	}
	return c.Client.Patch(ctx, obj, p, opts...)
}

// objectWrites is the key of statusWrites' record of Machine patches
// other than status: no Machine has that name.
const objectWrites = "(object)"

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
// of the client's rate limit a rolling update pays per replaced Machine;
// without that one, nothing in the API shows that the drain came first.
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
	got := w.of(name)
	if len(got) != 1 {
		t.Fatalf("%d status writes during the deletion, want 1:\n%s", len(got), got)
	}
	if !strings.Contains(got[0], `"step":"`+string(v1alpha1.StepDeleteInfrastructure)+`"`) {
		t.Errorf("the status write is not the record of the drain (step %s):\n%s", v1alpha1.StepDeleteInfrastructure, got[0])
	}
}

// A created Machine costs at most two status writes on its way to
// Running: one with the create's outcome (Provisioned, or Running when its
// Node is already Ready), one when its Node is Ready. No status is written
// before the create ends (docs/machine-phases.md, "Writes on the way to
// Running"); the Provisioned write stays, for the reasons given there.
// Besides, two patches of the Machine itself: the finalizer (a Machine
// created by a MachineSet has it already) and the providerID.
func TestCreateWritesStatusAtMostTwice(t *testing.T) {
	var w statusWrites
	h := controllertest.New(t, controllertest.Options{Machine: w.wrap})
	// The Node registers a second after the create returns: the create's
	// outcome is written before it is Ready (most of the time).
	h.Class("slow-boot", `{"region":"local","zones":["local-a"],"bootDelay":"1s"}`)
	w.arm()
	h.Machine("m", "slow-boot", nil)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	got := w.of(h.Prefix + "m")
	if len(got) == 0 || len(got) > 2 {
		t.Fatalf("%d status writes from creation to Running, want 1 or 2:\n%s", len(got), got)
	}
	if !strings.Contains(got[0], `"phase":"Provisioned"`) && !strings.Contains(got[0], `"phase":"Running"`) {
		t.Errorf("the first status write is not the create's outcome:\n%s", got[0])
	}
	if !strings.Contains(got[len(got)-1], `"phase":"Running"`) {
		t.Errorf("the last status write is not Running:\n%s", got[len(got)-1])
	}
	if objects := w.of(objectWrites); len(objects) != 2 {
		t.Errorf("%d patches of the Machine's metadata and spec, want 2 (finalizer, providerID):\n%s", len(objects), objects)
	}
}
