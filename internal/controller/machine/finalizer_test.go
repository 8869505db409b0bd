package machine_test

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// racingClient lets another controller in between the machine
// controller's read of a Machine and its write of the Machine's
// finalizers: before forwarding the first such write while the Machine
// lives, the other controller adds its finalizer on the server; before the
// first while the Machine is being deleted, it removes it again (no
// finalizer may be added then). The controller's read shows neither.
type racingClient struct {
	client.Client
	mu    sync.Mutex
	raced map[bool]bool // by "the Machine is being deleted"
}

const otherFinalizer = "example.com/other"

func (c *racingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	if m, ok := obj.(*v1alpha1.Machine); ok {
		if data, err := patch.Data(obj); err == nil && strings.Contains(string(data), "finalizers") {
			deleting := !m.DeletionTimestamp.IsZero()
			c.mu.Lock()
			first := !c.raced[deleting]
			c.raced[deleting] = true
			c.mu.Unlock()
			if first {
				otherController(ctx, client.ObjectKeyFromObject(m), !deleting)
			}
		}
	}
	return c.Client.Patch(ctx, obj, patch, opts...)
}

// otherController adds (or removes) its finalizer on the Machine, on the server.
func otherController(ctx context.Context, key client.ObjectKey, add bool) {
	m := &v1alpha1.Machine{}
	if err := controllertest.Env.Client.Get(ctx, key, m); err != nil {
		panic(err)
	}
	if add {
		m.Finalizers = append(m.Finalizers, otherFinalizer)
	} else {
		m.Finalizers = slices.DeleteFunc(m.Finalizers, func(f string) bool { return f == otherFinalizer })
	}
	if err := controllertest.Env.Client.Update(ctx, m); err != nil {
		panic(err)
	}
}

func TestFinalizerWritesKeepAnotherControllersFinalizer(t *testing.T) {
	racing := &racingClient{raced: map[bool]bool{}}
	h := controllertest.New(t, controllertest.Options{Machine: func(r *machine.Reconciler) {
		racing.Client = r.Client
		r.Client = racing
	}})
	h.Class("small", simSpec)
	h.Machine("m", "small", nil)

	h.Eventually(30*time.Second, "the Machine's finalizer", func() (bool, error) {
		return slices.Contains(h.Get("m").Finalizers, v1alpha1.MachineFinalizer), nil
	})
	if f := h.Get("m").Finalizers; !slices.Contains(f, otherFinalizer) {
		t.Fatalf("finalizers = %v: %s, added between the controller's read and its write, was dropped", f, otherFinalizer)
	}

	// The other controller lets go while ours removes its finalizer: the
	// Machine goes (a stale list written back would hold it, or be refused).
	h.DeleteMachine("m")
	h.WaitGone("m")
	racing.mu.Lock()
	defer racing.mu.Unlock()
	if !racing.raced[true] {
		t.Fatal("the finalizer removal was never raced")
	}
}
