package machinedisruptionbudget_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/machinedisruptionbudget"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// failingBudgetLists is the budget controller's client; while failing is
// set, its lists of budgets made outside a reconcile fail, as a cache
// read may: a Machine's event, mapped to its budgets by such a list, is
// then lost. A reconcile's lists do not fail: a reconcile that happened
// to run meanwhile would count its failures as lost events, and its
// retries would put the third Machine before the full pass does.
type failingBudgetLists struct {
	client.Client
	failing atomic.Bool
	failed  atomic.Int64
}

func (c *failingBudgetLists) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	_, budgets := list.(*v1alpha1.MachineDisruptionBudgetList)
	if budgets && c.failing.Load() && controller.ReconcileIDFromContext(ctx) == "" {
		c.failed.Add(1)
		return errors.New("test: listing budgets fails")
	}
	return c.Client.List(ctx, list, opts...)
}

// A Machine whose events were all lost (their mapping to the budgets
// failed) is counted at the budget's next tally made from every Machine,
// changed.FullPassEvery after the last, not never. The budget is woken
// by a change of its own, which alone would not put the Machine.
func TestAFullPassCountsAMachineWhoseEventsWereLost(t *testing.T) {
	c := &failingBudgetLists{}
	ns, r := startWith(t, func(mc client.Client) client.Client { c.Client = mc; return c })
	machine(t, ns, "a1", pool("a"), true)
	machine(t, ns, "a2", pool("a"), true)
	budget(t, ns, "web", pool("a"), intstr.FromInt32(1))
	waitStatus(t, ns, "web", "two Machines counted", func(b *v1alpha1.MachineDisruptionBudget) bool {
		return b.Status.ExpectedMachines == 2
	})

	// Both events of a third Machine (its creation, its Ready status: the
	// update's old and new versions are mapped each) are lost. A change
	// to the budget itself wakes it meanwhile: a reconcile alone does not
	// put a Machine no event noted.
	c.failing.Store(true)
	wake(t, ns, "web", "0")
	machine(t, ns, "a3", pool("a"), true)
	testenv.Eventually(t, 10*time.Second, "the third Machine's events to be lost", func() (bool, error) {
		return c.failed.Load() >= 3, nil
	})
	c.failing.Store(false)
	testenv.Consistently(t, 3*time.Second, "the budget to count two Machines while no event of the third reaches it", func() (bool, error) {
		return getBudget(t, ns, "web").Status.ExpectedMachines == 2, nil
	})

	key := types.NamespacedName{Namespace: ns, Name: "web"}
	testenv.Eventually(t, 10*time.Second, "the budget's tally to be kept", func() (bool, error) {
		return machinedisruptionbudget.AgeTally(r, key, changed.FullPassEvery), nil
	})
	// A change of the budget wakes it; its tally is now due for a full pass.
	wake(t, ns, "web", "1")
	waitStatus(t, ns, "web", "the full pass to count the third Machine", func(b *v1alpha1.MachineDisruptionBudget) bool {
		return b.Status.ExpectedMachines == 3
	})
}

// wake changes an annotation of budget name, which reconciles it.
func wake(t *testing.T, ns, name, value string) {
	t.Helper()
	b := getBudget(t, ns, name)
	p := client.MergeFrom(b.DeepCopy())
	metav1.SetMetaDataAnnotation(&b.ObjectMeta, "test/wake", value)
	if err := env.Client.Patch(ctx, b, p); err != nil {
		t.Fatal(err)
	}
}
