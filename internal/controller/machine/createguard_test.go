package machine_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// createCalls records the Machines whose CreateMachine call started.
type createCalls struct {
	mu    sync.Mutex
	names map[string]bool
}

func (c *createCalls) started(name string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.names[name]
}

// countingDriver notes every CreateMachine call before making it.
type countingDriver struct {
	driver.Driver
	calls *createCalls
}

func (d countingDriver) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	d.calls.mu.Lock()
	d.calls.names[req.Machine.Name] = true
	d.calls.mu.Unlock()
	return d.Driver.CreateMachine(ctx, req)
}

// newCountingHarness is newHarness with the sim driver wrapped to record
// which Machines' creates started.
func newCountingHarness(t *testing.T, edit func(*machine.Config)) (*controllertest.Harness, *createCalls) {
	calls := &createCalls{names: map[string]bool{}}
	h := controllertest.New(t, controllertest.Options{Config: edit, Machine: func(r *machine.Reconciler) {
		r.Drivers["sim"] = countingDriver{Driver: r.Drivers["sim"], calls: calls}
	}})
	return h, calls
}

// notListedYet is a cloud whose API does not list a VM it has just made:
// GetMachineStatus answers NotFound for every Machine.
type notListedYet struct{ driver.Driver }

func (notListedYet) GetMachineStatus(context.Context, *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	return nil, driver.Errorf(driver.NotFound, "no such VM (yet)")
}

// staleCache answers Gets of one Machine with an old copy of it, as an
// informer cache behind the controller's own last write does.
type staleCache struct {
	client.Client
	stale *v1alpha1.Machine
}

func (c staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if m, ok := obj.(*v1alpha1.Machine); ok && key == client.ObjectKeyFromObject(c.stale) {
		c.stale.DeepCopyInto(m)
		return nil
	}
	return c.Client.Get(ctx, key, obj, opts...)
}

// A reconcile that reads the Machine from a cache behind the providerID
// this controller recorded starts no second create, even where the cloud
// does not list the VM yet: no status is written before a create any
// more (so no Conflict catches the stale read), and the read of the
// Machine from the API server must.
func TestStaleReadStartsNoSecondCreate(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c", simSpec)
	created := h.Machine("m", "c", nil)
	running := h.WaitPhase("m", v1alpha1.PhaseRunning, 60*time.Second)

	// The Machine as a cache that has not seen the providerID shows it:
	// finalizer set, no VM recorded, an older resourceVersion.
	stale := running.DeepCopy()
	stale.ResourceVersion = created.ResourceVersion
	stale.Spec.ProviderID = ""
	delete(stale.Annotations, v1alpha1.LastAppliedProviderSpecAnnotation)
	stale.Status = v1alpha1.MachineStatus{}

	env := controllertest.Env.Client
	r := &machine.Reconciler{
		Client: staleCache{Client: env, stale: stale}, APIReader: env,
		Target: env, TargetAPI: env,
		Drivers:   map[string]driver.Driver{"sim": notListedYet{h.Sim}},
		Namespace: h.NS,
		Config:    h.Config,
	}
	r.StartCreates()
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: h.NS, Name: running.Name}}); err != nil {
		t.Fatal(err)
	}
	if r.CreateStarted(running.UID) {
		t.Fatal("a reconcile that read a stale Machine started a second create of its VM")
	}
	if m := h.Get("m"); m.Spec.ProviderID != running.Spec.ProviderID || m.Status.Phase != v1alpha1.PhaseRunning {
		t.Fatalf("the stale reconcile changed the Machine: providerID %q phase %s", m.Spec.ProviderID, m.Status.Phase)
	}
}
