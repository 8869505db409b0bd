package machineset_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
)

// failingSetLists is the set controller's client; while failing is set,
// its lists of MachineSets fail, as a cache read may: an orphan's event,
// mapped to the sets that may adopt it by such a list, is then lost.
type failingSetLists struct {
	client.Client
	failing atomic.Bool
}

func (c *failingSetLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*v1alpha1.MachineSetList); ok && c.failing.Load() {
		return errors.New("test: listing MachineSets fails")
	}
	return c.Client.List(ctx, list, opts...)
}

// An orphan whose events were all lost (the read of the sets that may
// adopt it failed each time) is adopted at the set's next pass over all
// its Machines, changed.FullPassEvery after the last, not never. The
// set is woken by a change of its own, which alone would not find it.
func TestAFullPassFindsAnOrphanWhoseEventsWereLost(t *testing.T) {
	c := &failingSetLists{}
	var r *machineset.Reconciler
	h := controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			c.Client = mgr.GetClient()
			r = &machineset.Reconciler{Client: c, Recorder: mgr.GetEventRecorder("machineset-controller"), Views: controllertest.ViewsOf(mgr)}
			return r.SetupWithManager(ctx, mgr, 2)
		},
	})
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 1, "small", nil)
	waitReady(h, "pool", 1, 60*time.Second)

	// From now on every event of an orphan is lost: its mapping to the
	// sets that may adopt it fails.
	c.failing.Store(true)
	h.Machine("stray", "small", func(m *v1alpha1.Machine) { m.Labels = map[string]string{"set": "pool"} })
	h.WaitPhase("stray", v1alpha1.PhaseRunning, 60*time.Second)
	adopted := func() (bool, error) {
		m := &v1alpha1.Machine{}
		err := controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: h.Prefix + "stray"}, m)
		if apierrors.IsNotFound(err) {
			return true, nil // adopted, and deleted as the set's second Machine
		}
		ref := metav1.GetControllerOf(m)
		return ref != nil && ref.Name == "pool" || !m.DeletionTimestamp.IsZero(), err
	}
	h.Consistently(3*time.Second, "the stray Machine to stay an orphan while none of its events reaches the set", func() (bool, error) {
		ok, err := adopted()
		return !ok, err
	})

	key := types.NamespacedName{Namespace: h.NS, Name: "pool"}
	h.Eventually(10*time.Second, "the set's ledger to be kept", func() (bool, error) {
		return machineset.AgeLedger(r, key, changed.FullPassEvery), nil
	})
	// A change of the set wakes it; its ledger is now due for a full pass.
	ms := getSet(h, "pool")
	p := client.MergeFrom(ms.DeepCopy())
	metav1.SetMetaDataAnnotation(&ms.ObjectMeta, "test/wake", "1")
	if err := controllertest.Env.Client.Patch(context.Background(), ms, p); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the full pass to adopt the stray Machine", adopted)
}
