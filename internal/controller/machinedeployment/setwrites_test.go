package machinedeployment_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
)

// setWrites runs, once armed, a change of another writer just before the
// deployment's next write to a MachineSet (after the deployment read the
// set), and records what the API server answered that write.
type setWrites struct {
	mu      sync.Mutex
	between func(ms *v1alpha1.MachineSet)
	answers []error
}

func (w *setWrites) arm(between func(ms *v1alpha1.MachineSet)) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.between, w.answers = between, nil
}

func (w *setWrites) got() []error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]error(nil), w.answers...)
}

// waitFor waits up to 10 s until the answers recorded satisfy done, and
// returns them as they are then.
func (w *setWrites) waitFor(t *testing.T, done func([]error) bool) []error {
	t.Helper()
	_ = wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return done(w.got()), nil
	})
	return w.got()
}

// setWritesClient is the deployment's client, its patches going through w.
type setWritesClient struct {
	client.Client
	w *setWrites
}

func (c setWritesClient) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	return c.w.patch(ctx, c.Client, obj, p, opts...)
}

func (w *setWrites) patch(ctx context.Context, c client.Client, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
	ms, isSet := obj.(*v1alpha1.MachineSet)
	if !isSet {
		return c.Patch(ctx, obj, p, opts...)
	}
	w.mu.Lock()
	between, armed := w.between, w.answers != nil || w.between != nil
	w.between = nil
	w.mu.Unlock()
	if between != nil {
		between(ms.DeepCopy())
	}
	err := c.Patch(ctx, obj, p, opts...)
	if armed {
		w.mu.Lock()
		w.answers = append(w.answers, err)
		w.mu.Unlock()
	}
	return err
}

// newSetWritesHarness is newHarness without the budgets, the deployment's
// client going through w.
func newSetWritesHarness(t *testing.T, w *setWrites) *harness {
	return &harness{controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			ms := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller")}
			if err := ms.SetupWithManager(ctx, mgr, 2); err != nil {
				return err
			}
			md := &machinedeployment.Reconciler{Client: setWritesClient{Client: mgr.GetClient(), w: w}, APIReader: mgr.GetAPIReader(),
				Recorder: mgr.GetEventRecorder("machinedeployment-controller")}
			return md.SetupWithManager(ctx, mgr, 1)
		},
	})}
}

// patchSet writes a change to a MachineSet as another writer would.
func patchSet(t *testing.T, ms *v1alpha1.MachineSet, status bool, data string) {
	t.Helper()
	p := client.RawPatch(types.MergePatchType, []byte(data))
	var err error
	if status {
		err = controllertest.Env.Client.Status().Patch(ctx, ms, p)
	} else {
		err = controllertest.Env.Client.Patch(ctx, ms, p)
	}
	if err != nil {
		t.Fatalf("their write to %s: %v", ms.Name, err)
	}
}

// waitReplicas waits until the deployment's only set asks for n Machines.
func (h *harness) waitSetReplicas(name string, n int32) {
	h.T.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		sets := h.sets(name)
		return len(sets) == 1 && sets[0].Spec.Replicas == n, nil
	})
	if err != nil {
		h.T.Fatalf("the set of %s never asked for %d Machines: %+v", name, n, h.sets(name))
	}
}

// The deployment's write of a set's replicas is decided from its view of
// the set's spec: a status write to the set between its read and its write
// (the MachineSet controller's, many times per second in a rollout) must
// not refuse it — under the resourceVersion lock 38 of ~180 set writes of
// a 200-Machine rolling update failed so (docs/benchmarks.md). A spec
// change between them must: the decision is made again from it.
func TestSetWritesLockOnTheSpecNotTheStatus(t *testing.T) {
	var w setWrites
	h := newSetWritesHarness(t, &w)
	h.Class("small", controllertest.SimSpec)
	h.deployment("web", 1, "small", nil)
	h.waitComplete("web", 60*time.Second)

	w.arm(func(ms *v1alpha1.MachineSet) {
		patchSet(t, ms, true, `{"status":{"observedGeneration":1234}}`)
	})
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = 2 })
	h.waitSetReplicas("web", 2)
	// The API server answers the write to everyone else before the
	// deployment's client records the answer: wait for the record.
	if got := w.waitFor(t, func(got []error) bool { return len(got) > 0 }); len(got) == 0 || got[0] != nil {
		t.Fatalf("the deployment's set writes after a status write between its read and its write answered %v, want the first to succeed", got)
	}

	w.arm(func(ms *v1alpha1.MachineSet) {
		patchSet(t, ms, false, `{"spec":{"minReadySeconds":7}}`)
	})
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = 3 })
	h.waitSetReplicas("web", 3)
	// (The API server refuses a failed precondition of the JSON patch
	// with a bare 422; package patch returns it as a Conflict.)
	got := w.waitFor(t, func(got []error) bool { return len(got) > 0 && got[len(got)-1] == nil })
	if len(got) < 2 || got[0] == nil || got[len(got)-1] != nil {
		t.Fatalf("the deployment's set writes after a spec change between its read and its write answered %v, want a refusal, then a write decided again", got)
	}
	h.waitComplete("web", 60*time.Second)
}
