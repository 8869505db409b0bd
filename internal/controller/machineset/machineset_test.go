package machineset_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

func set(h *controllertest.Harness, name string, replicas int32, class string, edit func(*v1alpha1.MachineSet)) *v1alpha1.MachineSet {
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: replicas,
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"set": name}},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"set": name}},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: class}},
			},
		},
	}
	if edit != nil {
		edit(ms)
	}
	h.Create(ms)
	return ms
}

func machinesOf(h *controllertest.Harness, set string) []v1alpha1.Machine {
	h.T.Helper()
	list := &v1alpha1.MachineList{}
	if err := controllertest.Env.Client.List(context.Background(), list, client.InNamespace(h.NS), client.MatchingLabels{"set": set}); err != nil {
		h.T.Fatal(err)
	}
	return list.Items
}

func getSet(h *controllertest.Harness, name string) *v1alpha1.MachineSet {
	h.T.Helper()
	ms := &v1alpha1.MachineSet{}
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: name}, ms); err != nil {
		h.T.Fatal(err)
	}
	return ms
}

func scaleTo(h *controllertest.Harness, name string, replicas int32) {
	h.T.Helper()
	ms := getSet(h, name)
	patch := client.MergeFrom(ms.DeepCopy())
	ms.Spec.Replicas = replicas
	if err := controllertest.Env.Client.Patch(context.Background(), ms, patch); err != nil {
		h.T.Fatal(err)
	}
}

// waitReady waits until the set reports n ready replicas and n Machines exist.
func waitReady(h *controllertest.Harness, name string, n int32, timeout time.Duration) *v1alpha1.MachineSet {
	h.T.Helper()
	var ms *v1alpha1.MachineSet
	h.Eventually(timeout, "the MachineSet to have ready replicas", func() (bool, error) {
		ms = getSet(h, name)
		// The Machines themselves, not only the status counts: those are
		// written at most once a second while the set moves, and may still
		// count a replacement's predecessor (docs/rollout.md, "Status counts").
		live, available := 0, 0
		for _, m := range machinesOf(h, name) {
			if m.DeletionTimestamp.IsZero() {
				live++
				if machinefacts.Available(&m, 0, time.Now()) {
					available++
				}
			}
		}
		return ms.Status.ReadyReplicas == n && ms.Status.Replicas == n && live == int(n) && available == int(n) && ms.Status.ObservedGeneration == ms.Generation, nil
	})
	return ms
}

func TestScaleUpAndDownByVictimOrder(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 5, "small", func(ms *v1alpha1.MachineSet) { ms.Spec.DeletePolicy = v1alpha1.DeletePolicyOldest })
	ms := waitReady(h, "pool", 5, 60*time.Second)
	if ms.Status.AvailableReplicas != 5 || ms.Status.FullyLabeledReplicas != 5 || ms.Status.Selector != "set=pool" {
		t.Errorf("status = %+v", ms.Status)
	}
	machines := machinesOf(h, "pool")
	for _, m := range machines {
		ref := metav1.GetControllerOf(&m)
		if ref == nil || ref.Name != "pool" || m.Labels[v1alpha1.MachineSetNameLabel] != "pool" {
			t.Fatalf("machine %s is not owned and labelled by its set: %+v %v", m.Name, ref, m.Labels)
		}
	}

	// The autoscaler marks one; on scale-down to 3 it goes first, then the oldest.
	sort.Slice(machines, func(i, j int) bool { return machines[i].CreationTimestamp.Before(&machines[j].CreationTimestamp) })
	marked := machines[4]
	patch := client.MergeFrom(marked.DeepCopy())
	marked.Annotations = map[string]string{v1alpha1.DeleteMachineAnnotation: "true"}
	if err := controllertest.Env.Client.Patch(context.Background(), &marked, patch); err != nil {
		t.Fatal(err)
	}
	scaleTo(h, "pool", 3)
	waitReady(h, "pool", 3, 60*time.Second)
	h.Eventually(30*time.Second, "the victims to be gone", func() (bool, error) { return len(machinesOf(h, "pool")) == 3, nil })
	left := map[string]bool{}
	for _, m := range machinesOf(h, "pool") {
		left[m.Name] = true
	}
	if left[marked.Name] {
		t.Errorf("the Machine marked %s survived the scale-down", v1alpha1.DeleteMachineAnnotation)
	}
	oldestLeft := 0
	for _, m := range machines[:4] {
		if !left[m.Name] {
			oldestLeft++
		}
	}
	if left[machines[0].Name] || oldestLeft != 1 {
		t.Errorf("with policy Oldest the oldest Machine must go after the marked one; left %v", left)
	}
	// One Event for the scale-down, not one per Machine (an Event is a write).
	h.ExpectEvent("MachinesDeleted", "pool")
	events := &corev1.EventList{}
	if err := controllertest.Env.Client.List(context.Background(), events, client.InNamespace(h.NS)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "MachineDeleted" || (e.Reason == "MachinesDeleted" && !strings.HasPrefix(e.Message, "deleting 2 Machine(s)")) {
			t.Errorf("Event %s %q; want one MachinesDeleted Event for both victims", e.Reason, e.Message)
		}
	}
}

// TestNoCreateStormFromAStaleCache creates 50 replicas at once and checks,
// from a watch that sees every creation, that exactly 50 Machines ever existed.
func TestNoCreateStormFromAStaleCache(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	w := watchMachines(h)
	created := map[string]bool{}
	var mu sync.Mutex
	go func() {
		for ev := range w.ResultChan() {
			if m, ok := ev.Object.(*v1alpha1.Machine); ok && ev.Type == watch.Added {
				mu.Lock()
				created[m.Name] = true
				mu.Unlock()
			}
		}
	}()
	set(h, "storm", 50, "small", nil)
	waitReady(h, "storm", 50, 120*time.Second)
	h.Eventually(5*time.Second, "the watch to catch up", func() (bool, error) {
		mu.Lock()
		defer mu.Unlock()
		return len(created) >= 50, nil
	})
	mu.Lock()
	defer mu.Unlock()
	if len(created) != 50 {
		t.Errorf("%d Machines were ever created for 50 replicas", len(created))
	}
	if n := len(h.Sim.Cloud().History()); n != 50 {
		t.Errorf("%d VMs were ever created for 50 replicas", n)
	}
}

func TestBrokenClassCostsOneMachineAtATime(t *testing.T) {
	h := newHarness(t)
	h.Class("noboot", `{"region":"local","zones":["local-a"],"faults":{"bootFailure":{}}}`)
	set(h, "broken", 20, "noboot", func(ms *v1alpha1.MachineSet) {
		ms.Spec.Template.Spec.Lifecycle.CreationTimeout = &metav1.Duration{Duration: 2 * time.Second}
	})
	// Failed Machines are replaced, one at a time: never more than one alive.
	h.Consistently(8*time.Second, "at most one Machine in creation", func() (bool, error) {
		alive := 0
		for _, m := range machinesOf(h, "broken") {
			if m.DeletionTimestamp.IsZero() && m.Status.FailureReason == "" {
				alive++
			}
		}
		if alive > 1 {
			return false, fmt.Errorf("%d Machines of a class that never boots are in creation at once", alive)
		}
		return true, nil
	})
	if n := len(h.Sim.Cloud().History()); n < 2 {
		t.Errorf("only %d VMs were tried in 8s: Failed Machines are not being replaced", n)
	}
	h.ExpectEvent("MachineDeleted", "broken")
	if c := meta.FindStatusCondition(getSet(h, "broken").Status.Conditions, v1alpha1.TemplateProvenCondition); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("TemplateProven %+v on a set none of whose Machines ever ran; want False", c)
	}
}

func TestAdoptionReleaseAndInPlacePropagation(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	orphan := h.Machine("orphan", "small", func(m *v1alpha1.Machine) { m.Labels = map[string]string{"set": "adopt"} })
	set(h, "adopt", 2, "small", nil)
	waitReady(h, "adopt", 2, 60*time.Second)
	if ref := metav1.GetControllerOf(h.Get("orphan")); ref == nil || ref.Name != "adopt" {
		t.Fatalf("the matching orphan was not adopted: %+v", ref)
	}
	if n := len(h.Sim.Cloud().History()); n != 2 {
		t.Fatalf("%d VMs for 2 replicas, one of them adopted", n)
	}

	// In place: a new node label in the template reaches the Machines and their Nodes.
	ms := getSet(h, "adopt")
	patch := client.MergeFrom(ms.DeepCopy())
	ms.Spec.Template.Spec.NodeTemplate.Metadata.Labels = map[string]string{"tier": "gold"}
	if err := controllertest.Env.Client.Patch(context.Background(), ms, patch); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the label on every Node", func() (bool, error) {
		for _, m := range machinesOf(h, "adopt") {
			if m.Status.NodeRef == nil {
				return false, nil
			}
			node, err := h.Node(m.Status.NodeRef.Name)
			if err != nil || node.Labels["tier"] != "gold" {
				return false, nil
			}
		}
		return true, nil
	})
	if n := len(h.Sim.Cloud().History()); n != 2 {
		t.Fatalf("the in-place change replaced Machines (%d VMs ever)", n)
	}

	// The orphan stops matching: released, and replaced to keep 2.
	m := h.Get("orphan")
	mpatch := client.MergeFrom(m.DeepCopy())
	m.Labels["set"] = "elsewhere"
	if err := controllertest.Env.Client.Patch(context.Background(), m, mpatch); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the release", func() (bool, error) {
		return metav1.GetControllerOf(h.Get("orphan")) == nil, nil
	})
	waitReady(h, "adopt", 2, 60*time.Second)

	// It matches again, now that the set runs: adopted again (found among
	// the orphans, not the set's own Machines), and, with the higher
	// priority, kept while the set scales back down to 2.
	m = h.Get("orphan")
	mpatch = client.MergeFrom(m.DeepCopy())
	m.Labels["set"] = "adopt"
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[v1alpha1.PriorityAnnotation] = "10"
	if err := controllertest.Env.Client.Patch(context.Background(), m, mpatch); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the second adoption", func() (bool, error) {
		ref := metav1.GetControllerOf(h.Get("orphan"))
		return ref != nil && ref.Name == "adopt", nil
	})
	waitReady(h, "adopt", 2, 60*time.Second)
	if m := h.Get("orphan"); !m.DeletionTimestamp.IsZero() {
		t.Errorf("the adopted Machine with the higher priority was deleted on scale-down")
	}
	_ = orphan
}

func TestFrozenSetDoesNotScaleUp(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "frozen", 3, "small", func(ms *v1alpha1.MachineSet) {
		ms.Labels = map[string]string{v1alpha1.FrozenLabel: "true"}
	})
	h.Eventually(15*time.Second, "the Frozen condition", func() (bool, error) {
		ms := getSet(h, "frozen")
		for _, c := range ms.Status.Conditions {
			if c.Type == v1alpha1.FrozenCondition && c.Status == metav1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	if n := len(machinesOf(h, "frozen")); n != 0 {
		t.Fatalf("a frozen MachineSet created %d Machines", n)
	}
	ms := getSet(h, "frozen")
	patch := client.MergeFrom(ms.DeepCopy())
	delete(ms.Labels, v1alpha1.FrozenLabel)
	if err := controllertest.Env.Client.Patch(context.Background(), ms, patch); err != nil {
		t.Fatal(err)
	}
	waitReady(h, "frozen", 3, 60*time.Second)
}

func TestAvailabilityWaitsForMinReadySeconds(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "slow", 1, "small", func(ms *v1alpha1.MachineSet) { ms.Spec.MinReadySeconds = 3 })
	ms := waitReady(h, "slow", 1, 60*time.Second)
	if ms.Status.AvailableReplicas != 0 {
		t.Fatalf("available right after Ready despite minReadySeconds 3: %+v", ms.Status)
	}
	h.Eventually(10*time.Second, "availability after minReadySeconds", func() (bool, error) {
		return getSet(h, "slow").Status.AvailableReplicas == 1, nil
	})
}

// A class that cannot make a working Machine costs a few Machines, not one
// a second: replacing Machines that failed before running backs off.
func TestBrokenClassReplacementsBackOff(t *testing.T) {
	h := newHarness(t)
	h.Class("bad", `{"region":"local","zones":[]}`) // refused: InvalidArgument
	set(h, "web", 1, "bad", nil)
	var uids sync.Map
	count := func() int {
		n := 0
		for _, m := range machinesOf(h, "web") {
			uids.Store(m.UID, true)
		}
		uids.Range(func(any, any) bool { n++; return true })
		return n
	}
	// The first failure is replaced at once, the second after 10s.
	h.Eventually(15*time.Second, "two Machines to fail and be replaced", func() (bool, error) { return count() >= 3, nil })
	h.Consistently(6*time.Second, "at most 3 Machines made from a broken class (the replacements back off)", func() (bool, error) {
		return count() <= 3, nil
	})
	h.Eventually(10*time.Second, "a ReplicaFailure saying the replacement waits", func() (bool, error) {
		for _, c := range getSet(h, "web").Status.Conditions {
			if c.Type == v1alpha1.ReplicaFailureCondition && strings.Contains(c.Message, "waits") {
				return true, nil
			}
		}
		return false, nil
	})
}
