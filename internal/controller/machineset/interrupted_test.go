package machineset_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// TestInterruptedMachineIsReplacedFirst: the provider announces that it
// takes a Machine's VM away in 3 s. The Machine gets the Interrupted
// condition, the deadline and an Event; its replacement exists before
// its deletion starts; its drain, blocked by a PodDisruptionBudget that
// allows nothing, is forced at the deadline and not 2 h later at the
// drain timeout. A rebalance recommendation only makes an Event.
func TestInterruptedMachineIsReplacedFirst(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 2, "small", nil)
	waitReady(h, "pool", 2, 60*time.Second)
	machines := machinesOf(h, "pool")
	victim, other := machines[0], machines[1]

	// A pod on the victim's Node that no eviction may move.
	pod := h.UnevictablePod("critical", victim.Status.NodeRef.Name)

	// Every change of the set's Machines from here on, in order.
	w := watchMachines(h)

	rebalance, err := h.Sim.Cloud().Announce(h.Sim.Cloud().MachineVMs(h.NS, other.Name)[0].ID, driver.VMRebalanceRecommendation, 0)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := h.Sim.Cloud().Announce(h.Sim.Cloud().MachineVMs(h.NS, victim.Name)[0].ID, driver.VMInterruption, 3*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	h.ExpectEvent("RebalanceRecommended", other.Name)
	h.ExpectEvent("Interrupted", victim.Name)

	// Until the victim is gone: when its replacement appeared, when its
	// deletion started, and when it was gone.
	var created, deleting, gone time.Time
	var replacement string
	timeout := time.After(60 * time.Second)
	for gone.IsZero() {
		select {
		case e := <-w.ResultChan():
			m, ok := e.Object.(*v1alpha1.Machine)
			if !ok {
				t.Fatalf("watch: %v", e.Object)
			}
			switch {
			case m.Name == victim.Name && e.Type == watch.Deleted:
				gone = time.Now()
			case m.Name == victim.Name && !m.DeletionTimestamp.IsZero() && deleting.IsZero():
				deleting = time.Now()
				if !meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.InterruptedCondition) ||
					m.Status.InterruptionDeadline == nil || !m.Status.InterruptionDeadline.Time.Equal(ev.Deadline.Truncate(time.Second)) {
					t.Errorf("the victim's status when its deletion started: conditions %+v, deadline %v; want Interrupted and %s",
						m.Status.Conditions, m.Status.InterruptionDeadline, ev.Deadline)
				}
			case e.Type == watch.Added && m.Name != victim.Name && m.Name != other.Name && created.IsZero():
				created, replacement = time.Now(), m.Name
			}
		case <-timeout:
			t.Fatalf("the interrupted Machine %s is not gone (replacement %q at %v, deletion at %v)", victim.Name, replacement, created, deleting)
		}
	}
	if created.IsZero() || deleting.IsZero() || deleting.Before(created) {
		t.Fatalf("replacement %q created at %v, the interrupted Machine's deletion started at %v: want the replacement first", replacement, created, deleting)
	}
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{}); err == nil {
		t.Error("the pod the budget protected is still there: the drain was not forced at the deadline")
	}
	waitReady(h, "pool", 2, 60*time.Second)
	for _, m := range machinesOf(h, "pool") {
		if m.Name == other.Name && meta.FindStatusCondition(m.Status.Conditions, v1alpha1.InterruptedCondition) != nil {
			t.Errorf("the Machine with only a rebalance recommendation (%s) got the Interrupted condition", rebalance.ProviderID)
		}
	}
	if n := len(machinesOf(h, "pool")); n != 2 {
		t.Errorf("%d Machines; want 2", n)
	}
}
