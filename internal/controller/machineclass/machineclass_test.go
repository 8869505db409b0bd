package machineclass_test

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machineclass"
)

func TestMain(m *testing.M) { os.Exit(controllertest.Run(m)) }

// newHarness runs the machine controller and the class controller, whose
// drivers are the harness's ("sim").
func newHarness(t *testing.T) *controllertest.Harness {
	return controllertest.New(t, controllertest.Options{Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
		r := &machineclass.Reconciler{
			Client:    mgr.GetClient(),
			APIReader: mgr.GetAPIReader(),
			Recorder:  mgr.GetEventRecorder("machineclass-controller"),
			Providers: func(p string) bool { return p == "sim" },
			Views:     controllertest.ViewsOf(mgr),
		}
		return r.SetupWithManager(ctx, mgr, 2)
	}})
}

func getClass(h *controllertest.Harness, name string) (*v1alpha1.MachineClass, error) {
	c := &v1alpha1.MachineClass{}
	return c, controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: name}, c)
}

// A class in use is not deleted while its Machines need it to delete their
// VMs; it goes once they are gone.
func TestClassInUseWaitsForItsMachines(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.Machine("a", "small", nil)
	h.Machine("b", "small", nil)
	h.WaitPhase("a", v1alpha1.PhaseRunning, 30*time.Second)
	h.WaitPhase("b", v1alpha1.PhaseRunning, 30*time.Second)
	h.Eventually(15*time.Second, "the class's finalizer, count and driver", func() (bool, error) {
		c, err := getClass(h, "small")
		return err == nil && slices.Contains(c.Finalizers, v1alpha1.MachineClassFinalizer) && c.Status.Machines == 2 &&
			meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.DriverAvailableCondition) &&
			meta.IsStatusConditionTrue(c.Status.Conditions, v1alpha1.InUseCondition), err
	})

	c, _ := getClass(h, "small")
	if err := controllertest.Env.Client.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	h.ExpectEvent(machineclass.ReasonDeletionBlocked, "small")
	h.DeleteMachine("a")
	h.WaitGone("a")
	h.Eventually(15*time.Second, "the count to drop to 1", func() (bool, error) {
		c, err := getClass(h, "small")
		return err == nil && c.Status.Machines == 1, err
	})
	if c, err := getClass(h, "small"); err != nil || !slices.Contains(c.Finalizers, v1alpha1.MachineClassFinalizer) {
		t.Fatalf("the class went while Machine b uses it: %v", err)
	}
	// Machine b's VM can still be deleted: the class is there.
	h.DeleteMachine("b")
	h.WaitGone("b")
	if vms := h.VMs("b"); len(vms) != 0 {
		t.Fatalf("Machine b is gone but its VM %s is not", vms[0].ProviderID)
	}
	h.Eventually(15*time.Second, "the class to go", func() (bool, error) {
		_, err := getClass(h, "small")
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// A class no one uses carries no finalizer, and a driver the manager lacks
// shows in its status.
func TestUnusedClassGoesAtOnceAndReportsAMissingDriver(t *testing.T) {
	h := newHarness(t)
	c := h.Class("other", controllertest.SimSpec)
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Provider = "elsewhere"
	if err := controllertest.Env.Client.Patch(context.Background(), c, patch); err != nil {
		t.Fatal(err)
	}
	h.Eventually(15*time.Second, "DriverAvailable False", func() (bool, error) {
		c, err := getClass(h, "other")
		d := meta.FindStatusCondition(c.Status.Conditions, v1alpha1.DriverAvailableCondition)
		return err == nil && d != nil && d.Status == "False" && d.Reason == machineclass.ReasonDriverNotRegistered &&
			len(c.Finalizers) == 0, err
	})
	if err := controllertest.Env.Client.Delete(context.Background(), c); err != nil {
		t.Fatal(err)
	}
	h.Eventually(10*time.Second, "the class to go", func() (bool, error) {
		_, err := getClass(h, "other")
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}

// staleLists is a cache that has not seen any user of a class yet: its
// lists are empty.
type staleLists struct{ client.Client }

func (staleLists) List(context.Context, client.ObjectList, ...client.ListOption) error { return nil }

// A Machine the cache does not show yet still keeps the class's finalizer:
// the API server is asked before it goes.
func TestFinalizerStaysForAMachineTheCacheHasNotSeen(t *testing.T) {
	// No class controller runs here: the reconcile below is the only one.
	h := controllertest.New(t, controllertest.Options{})
	h.Class("fresh", controllertest.SimSpec)
	c, err := getClass(h, "fresh")
	if err != nil {
		t.Fatal(err)
	}
	c.Finalizers = append(c.Finalizers, v1alpha1.MachineClassFinalizer)
	if err := controllertest.Env.Client.Update(t.Context(), c); err != nil {
		t.Fatal(err)
	}
	h.Machine("new", "fresh", nil)
	r := &machineclass.Reconciler{Client: staleLists{controllertest.Env.Client}, APIReader: controllertest.Env.Client}
	if _, err := r.Reconcile(t.Context(), reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.NS, Name: "fresh"}}); err != nil {
		t.Fatal(err)
	}
	if c, err := getClass(h, "fresh"); err != nil || !slices.Contains(c.Finalizers, v1alpha1.MachineClassFinalizer) {
		t.Fatalf("a reconcile from a cache behind dropped the finalizer of a class Machine new uses (err %v)", err)
	}
}
