package machineset_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machinedisruptionbudget"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// readyBeforeDelete is the set controller's client: a DELETE of a Machine
// the set judged not Ready waits until the Machine is Ready in the API,
// the race of a chaos run (a new Machine's Node joining, a Node back from
// NotReady, while the set deletes the Machine as unavailable).
type readyBeforeDelete struct {
	client.Client
	mu   sync.Mutex
	held []string
}

func (c *readyBeforeDelete) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	m, ok := obj.(*v1alpha1.Machine)
	if !ok || meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ReadyCondition) {
		return c.Client.Delete(ctx, obj, opts...)
	}
	c.mu.Lock()
	c.held = append(c.held, m.Name)
	c.mu.Unlock()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		live := &v1alpha1.Machine{}
		if err := controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(m), live); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		return meta.IsStatusConditionTrue(live.Status.Conditions, v1alpha1.ReadyCondition), nil
	})
	if err != nil {
		return err
	}
	return c.Client.Delete(ctx, obj, opts...)
}

func (c *readyBeforeDelete) heldDeletes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.held...)
}

// A victim the budget lets through because it is unavailable (a new
// Machine not Ready yet) is deleted only as it was judged: Ready by the
// time its DELETE arrives, it is not deleted, and asking again finds it
// needs a grant the exhausted budget does not give. Without the
// precondition a chaos run saw three Machines taken while Ready under a
// budget of one.
func TestVictimReadyAgainNeedsAGrant(t *testing.T) {
	c := &readyBeforeDelete{}
	h := controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			mdb := &machinedisruptionbudget.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
			if err := mdb.SetupWithManager(mgr, 1); err != nil {
				return err
			}
			gate := &disruption.Gate{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("disruption-gate")}
			c.Client = mgr.GetClient()
			r := &machineset.Reconciler{Client: c, Recorder: mgr.GetEventRecorder("machineset-controller"), Gate: gate, Views: controllertest.ViewsOf(mgr)}
			return r.SetupWithManager(ctx, mgr, 2)
		},
	})
	// New Machines stay not Ready for 15s: the time to scale down.
	h.Class("slow", `{"region":"local","zones":["local-a"],"bootDelay":"15s"}`)
	// Newest first: Ready again, the replacement is still the victim (the
	// Random policy would pick either of two equal Machines).
	set(h, "pool", 2, "slow", func(ms *v1alpha1.MachineSet) { ms.Spec.DeletePolicy = v1alpha1.DeletePolicyNewest })
	waitReady(h, "pool", 2, 60*time.Second)
	budget(h, "pool", "pool", 1)

	// One Machine held in its deletion exhausts the budget; its
	// replacement is created, not Ready yet.
	before := machinesOf(h, "pool")
	held := before[0]
	editMachine(h, &held, func(m *v1alpha1.Machine) { m.Finalizers = append(m.Finalizers, holdFinalizer) })
	defer editMachine(h, &held, func(m *v1alpha1.Machine) { m.Finalizers = without(m.Finalizers, holdFinalizer) })
	if err := controllertest.Env.Client.Delete(context.Background(), &held); err != nil {
		t.Fatal(err)
	}
	var fresh string
	h.Eventually(30*time.Second, "the replacement of the deleted Machine", func() (bool, error) {
		for _, m := range machinesOf(h, "pool") {
			if m.Name != before[0].Name && m.Name != before[1].Name {
				fresh = m.Name
				return true, nil
			}
		}
		return false, nil
	})
	scaleTo(h, "pool", 1)

	h.Eventually(2*time.Minute, "the replacement, Ready before its DELETE arrived, to wait for the budget", func() (bool, error) {
		m := &v1alpha1.Machine{}
		if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: fresh}, m); err != nil {
			return false, client.IgnoreNotFound(err)
		}
		if !m.DeletionTimestamp.IsZero() {
			return false, fmt.Errorf("Machine %s was deleted while Ready under an exhausted budget (DELETEs held until Ready: %v)", fresh, c.heldDeletes())
		}
		return waiting(m, v1alpha1.DisruptionScaleDown), nil
	})
	if got := c.heldDeletes(); len(got) == 0 || got[0] != fresh {
		t.Fatalf("DELETEs held until Ready: %v, want the replacement %s's: the race was not exercised", got, fresh)
	}
}
