package machineset_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// preserved returns the Preserved condition of a Machine, nil if none.
func preserved(m *v1alpha1.Machine) *metav1.Condition {
	return meta.FindStatusCondition(m.Status.Conditions, v1alpha1.PreservedCondition)
}

// liveMachines are the set's Machines not being deleted.
func liveMachines(h *controllertest.Harness, set string) []v1alpha1.Machine {
	var out []v1alpha1.Machine
	for _, m := range machinesOf(h, set) {
		if m.DeletionTimestamp.IsZero() {
			out = append(out, m)
		}
	}
	return out
}

// annotateNode sets (value != "") or removes an annotation on a Node.
func annotateNode(h *controllertest.Harness, name, key, value string) {
	h.T.Helper()
	n, err := h.Node(name)
	if err != nil {
		h.T.Fatal(err)
	}
	p := client.MergeFrom(n.DeepCopy())
	if n.Annotations == nil {
		n.Annotations = map[string]string{}
	}
	if value == "" {
		delete(n.Annotations, key)
	} else {
		n.Annotations[key] = value
	}
	if err := controllertest.Env.Client.Patch(context.Background(), n, p); err != nil {
		h.T.Fatal(err)
	}
}

func hasTaint(n *corev1.Node, key string) bool {
	return slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

// heldNode reports whether a Node is cordoned, tainted and kept from the autoscaler.
func heldNode(n *corev1.Node) bool {
	return n.Spec.Unschedulable && hasTaint(n, v1alpha1.PreservedTaintKey) &&
		n.Annotations[v1alpha1.AutoscalerScaleDownDisabledAnnotation] == "true"
}

// failNode makes a Machine's Node NotReady: with a short health timeout the
// Machine is Failed soon after.
func failNode(h *controllertest.Harness, m *v1alpha1.Machine) {
	h.T.Helper()
	if _, err := h.Sim.Cloud().SetNodeReady(m.Status.NodeRef.Name, false); err != nil {
		h.T.Fatal(err)
	}
}

// A Running Machine whose Node says preserve=now is kept, cordoned and
// tainted, and replaced; a scale-down to zero takes its replacement, not
// it; once the annotation goes, exactly what preservation added is taken
// off its Node and it counts again, so the scale-down removes it.
func TestPreserveNowKeepsARunningMachineUntilTheAnnotationGoes(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 1, "small", nil)
	waitReady(h, "pool", 1, 60*time.Second)
	m := liveMachines(h, "pool")[0]
	nodeName := m.Status.NodeRef.Name

	// Another controller's taint on the Node must survive preservation.
	n, err := h.Node(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	p := client.MergeFrom(n.DeepCopy())
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: "example.com/other", Effect: corev1.TaintEffectPreferNoSchedule})
	if err := controllertest.Env.Client.Patch(context.Background(), n, p); err != nil {
		t.Fatal(err)
	}
	annotateNode(h, nodeName, v1alpha1.PreserveAnnotation, v1alpha1.PreserveNow)

	h.Eventually(30*time.Second, "the Machine preserved, its Node held and a replacement Ready", func() (bool, error) {
		got := &v1alpha1.Machine{}
		if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(&m), got); err != nil {
			return false, err
		}
		c := preserved(got)
		n, err := h.Node(nodeName)
		if err != nil {
			return false, err
		}
		ms := getSet(h, "pool")
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.PreservedNowReason &&
			got.Status.PreservedUntil != nil && heldNode(n) &&
			ms.Status.Replicas == 1 && ms.Status.ReadyReplicas == 1 && ms.Status.PreservedReplicas == 1 &&
			len(liveMachines(h, "pool")) == 2, nil
	})
	h.ExpectEvent("PreservationStarted", m.Name)

	// Scale-down to zero: the replacement goes, the preserved Machine stays.
	scaleTo(h, "pool", 0)
	h.Eventually(30*time.Second, "only the preserved Machine left", func() (bool, error) {
		ms := machinesOf(h, "pool")
		return len(ms) == 1 && ms[0].Name == m.Name && ms[0].DeletionTimestamp.IsZero(), nil
	})

	// Released: the Node loses the cordon, taint and annotation
	// preservation added, keeps the other taint, and the Machine, counted
	// again, is removed by the scale-down.
	annotateNode(h, nodeName, v1alpha1.PreserveAnnotation, "")
	h.ExpectEvent("PreservationEnded", m.Name)
	h.Eventually(30*time.Second, "the Machine removed by the scale-down", func() (bool, error) {
		return len(machinesOf(h, "pool")) == 0, nil
	})
	if n, err := h.Node(nodeName); err == nil {
		// Deleted with its Machine, unless the test saw it in between.
		if !hasTaint(n, "example.com/other") {
			t.Errorf("another controller's taint was removed: %+v", n.Spec.Taints)
		}
	} else if !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// Released from preserve=now without being deleted, a healthy Machine's
// Node gets back exactly what it had: a cordon that was there before stays.
func TestPreserveNowReleaseUndoesOnlyWhatItAdded(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.Machine("m", "small", nil)
	m := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	nodeName := m.Status.NodeRef.Name
	n, err := h.Node(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	p := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = true // someone else's cordon
	if err := controllertest.Env.Client.Patch(context.Background(), n, p); err != nil {
		t.Fatal(err)
	}
	mp := client.MergeFrom(m.DeepCopy())
	m.Annotations = map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveNow}
	if err := controllertest.Env.Client.Patch(context.Background(), m, mp); err != nil {
		t.Fatal(err)
	}
	h.Eventually(20*time.Second, "the Node held", func() (bool, error) {
		n, err := h.Node(nodeName)
		return err == nil && heldNode(n), err
	})
	h.RemoveAnnotation("m", v1alpha1.PreserveAnnotation)
	h.Eventually(20*time.Second, "the Node released", func() (bool, error) {
		n, err := h.Node(nodeName)
		if err != nil {
			return false, err
		}
		_, ca := n.Annotations[v1alpha1.AutoscalerScaleDownDisabledAnnotation]
		_, changes := n.Annotations[v1alpha1.NodePreservedChangesAnnotation]
		return !hasTaint(n, v1alpha1.PreservedTaintKey) && !ca && !changes && preserved(h.Get("m")) == nil, nil
	})
	n, err = h.Node(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	if !n.Spec.Unschedulable {
		t.Error("the release uncordoned a Node that was cordoned before preservation")
	}
	if got := h.Get("m"); got.Status.Phase != v1alpha1.PhaseRunning || !got.DeletionTimestamp.IsZero() {
		t.Errorf("the released healthy Machine is %s, deleting %v", got.Status.Phase, !got.DeletionTimestamp.IsZero())
	}
}

// A Machine with preserve=when-failed that fails keeps its VM and its
// held Node while a replacement runs, across a manager restart, until the
// preserve timeout; then it is drained and deleted like any Failed Machine.
func TestPreserveWhenFailedUntilTheTimeoutAcrossARestart(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	// Long enough for the replacement to become Ready while the failed
	// Machine is still preserved, even on a busy machine.
	const timeout = 20 * time.Second
	set(h, "pool", 1, "small", func(ms *v1alpha1.MachineSet) {
		ms.Spec.Template.Metadata.Annotations = map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveWhenFailed}
		ms.Spec.Template.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: time.Second}
		ms.Spec.Template.Spec.Lifecycle.PreserveTimeout = &metav1.Duration{Duration: timeout}
	})
	waitReady(h, "pool", 1, 60*time.Second)
	m := liveMachines(h, "pool")[0]
	if c := preserved(&m); c != nil {
		t.Fatalf("a healthy when-failed Machine is preserved: %+v", c)
	}
	failNode(h, &m)

	var kept v1alpha1.Machine
	h.Eventually(30*time.Second, "the failed Machine preserved beside a Ready replacement", func() (bool, error) {
		ms := getSet(h, "pool")
		for _, x := range liveMachines(h, "pool") {
			if x.Name == m.Name {
				kept = x
			}
		}
		c := preserved(&kept)
		if c == nil || kept.Status.NodeRef == nil {
			return false, nil
		}
		n, err := h.Node(kept.Status.NodeRef.Name)
		if err != nil {
			return false, err
		}
		return c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.PreservedWhenFailedReason && heldNode(n) &&
			kept.Status.Phase == v1alpha1.PhaseFailed && ms.Status.ReadyReplicas == 1 && ms.Status.PreservedReplicas == 1, nil
	})
	start := preserved(&kept).LastTransitionTime.Time
	if want := start.Add(timeout); !kept.Status.PreservedUntil.Time.Equal(want) {
		t.Errorf("preservedUntil = %s, want start + timeout = %s", kept.Status.PreservedUntil.Time, want)
	}
	if vms := h.Sim.Cloud().MachineVMs(h.NS, m.Name); len(vms) != 1 {
		t.Errorf("the preserved Machine has %d VMs, want its 1", len(vms))
	}

	// A restart changes nothing: the state is in the Machine and the Node.
	// The new manager neither starts the preservation again nor makes a
	// second replacement, and ends it at the timeout.
	h.StopManager()
	h.StartManager()
	h.Eventually(timeout+30*time.Second, "the released Machine gone", func() (bool, error) {
		err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(&m), &v1alpha1.Machine{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
	h.ExpectEvent("PreservationEnded", m.Name)
	if n := countEvents(h, m.Name, "PreservationStarted"); n != 1 {
		t.Errorf("%d PreservationStarted Events, want 1: the restart started the preservation again", n)
	}
	if n := len(h.Sim.Cloud().History()); n != 2 {
		t.Errorf("%d VMs made, want 2: the failed Machine's and its one replacement's", n)
	}
	if vms := h.Sim.Cloud().MachineVMs(h.NS, m.Name); len(vms) != 0 {
		t.Errorf("the released Machine's VM is still there: %+v", vms)
	}
	if _, err := h.Node(m.Status.NodeRef.Name); !apierrors.IsNotFound(err) {
		t.Errorf("the released Machine's Node is still there: %v", err)
	}
	if live := liveMachines(h, "pool"); len(live) != 1 {
		t.Errorf("%d Machines after the release, want the replacement only", len(live))
	}
}

// With autoPreserveFailedMax 1, two failed Machines: one is kept, the
// other replaced at once; both get replacements.
func TestAutoPreserveKeepsAtMostTheLimit(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 2, "small", func(ms *v1alpha1.MachineSet) {
		ms.Spec.AutoPreserveFailedMax = ptr.To[int32](1)
		ms.Spec.MaxConcurrentReplacements = ptr.To[int32](2)
		ms.Spec.Template.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: time.Second}
	})
	waitReady(h, "pool", 2, 60*time.Second)
	first := liveMachines(h, "pool")
	for i := range first {
		failNode(h, &first[i])
	}
	h.Eventually(40*time.Second, "one failed Machine kept, the other gone, two replacements Ready", func() (bool, error) {
		var kept, old int
		for _, x := range machinesOf(h, "pool") {
			if x.Name == first[0].Name || x.Name == first[1].Name {
				old++
				if c := preserved(&x); c != nil && c.Status == metav1.ConditionTrue && c.Reason == v1alpha1.PreservedAutoReason {
					kept++
				}
			}
		}
		ms := getSet(h, "pool")
		return old == 1 && kept == 1 && ms.Status.ReadyReplicas == 2 && ms.Status.PreservedReplicas == 1, nil
	})
	h.ExpectEvent("AutoPreserved", "pool")

	// Lowering the limit to 0 (as a rollout does) releases it.
	ms := getSet(h, "pool")
	p := client.MergeFrom(ms.DeepCopy())
	ms.Spec.AutoPreserveFailedMax = ptr.To[int32](0)
	if err := controllertest.Env.Client.Patch(context.Background(), ms, p); err != nil {
		t.Fatal(err)
	}
	h.ExpectEvent("AutoPreserveReleased", "pool")
	h.Eventually(30*time.Second, "the released Machine gone", func() (bool, error) {
		for _, x := range machinesOf(h, "pool") {
			if x.Name == first[0].Name || x.Name == first[1].Name {
				return false, nil
			}
		}
		return len(liveMachines(h, "pool")) == 2, nil
	})
}

// An unknown preserve value preserves nothing and says why, in a condition
// and a Warning Event.
func TestInvalidPreserveValueIsReported(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.Machine("m", "small", func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{v1alpha1.PreserveAnnotation: "forever"}
	})
	h.Eventually(30*time.Second, "the invalid value reported", func() (bool, error) {
		c := preserved(h.Get("m"))
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == v1alpha1.PreserveInvalidReason &&
			strings.Contains(c.Message, `"forever"`), nil
	})
	h.ExpectEvent(v1alpha1.PreserveInvalidReason, "m")
}

// Admission refuses a negative autoPreserveFailedMax and a non-positive preserveTimeout.
func TestPreserveSettingsValidatedAtAdmission(t *testing.T) {
	h := newHarness(t)
	bad := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: h.NS},
		Spec: v1alpha1.MachineSetSpec{
			Selector:              v1alpha1.LabelSelector{MatchLabels: map[string]string{"set": "bad"}},
			Template:              v1alpha1.MachineTemplateSpec{Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"set": "bad"}}},
			AutoPreserveFailedMax: ptr.To[int32](-1),
		},
	}
	if err := controllertest.Env.Client.Create(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "autoPreserveFailedMax") {
		t.Errorf("autoPreserveFailedMax -1 was not refused: %v", err)
	}
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "bad", Namespace: h.NS},
		Spec: v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "small"},
			Lifecycle: v1alpha1.MachineLifecycle{PreserveTimeout: &metav1.Duration{Duration: 0}}},
	}
	if err := controllertest.Env.Client.Create(context.Background(), m); err == nil || !strings.Contains(err.Error(), "preserveTimeout") {
		t.Errorf("preserveTimeout 0s was not refused: %v", err)
	}
}

// countEvents counts the Events with reason on the object called name.
func countEvents(h *controllertest.Harness, name, reason string) int {
	h.T.Helper()
	events := &corev1.EventList{}
	if err := controllertest.Env.Client.List(context.Background(), events, client.InNamespace(h.NS)); err != nil {
		h.T.Fatal(err)
	}
	n := 0
	for _, e := range events.Items {
		if e.InvolvedObject.Name == name && e.Reason == reason {
			n++
		}
	}
	return n
}

// A preserved failed Machine has its replacement already: it does not hold
// the meltdown limit (maxConcurrentReplacements 1) against the next failure.
func TestPreservedMachineDoesNotHoldTheMeltdownLimit(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 2, "small", func(ms *v1alpha1.MachineSet) {
		ms.Spec.AutoPreserveFailedMax = ptr.To[int32](1)
		ms.Spec.MaxConcurrentReplacements = ptr.To[int32](1)
		ms.Spec.Template.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: time.Second}
	})
	waitReady(h, "pool", 2, 60*time.Second)
	first := liveMachines(h, "pool")
	failNode(h, &first[0])
	h.Eventually(30*time.Second, "the first failed Machine kept", func() (bool, error) {
		return getSet(h, "pool").Status.PreservedReplicas == 1, nil
	})
	failNode(h, &first[1])
	h.Eventually(30*time.Second, "the second failed Machine replaced", func() (bool, error) {
		for _, x := range machinesOf(h, "pool") {
			if x.Name == first[1].Name {
				return false, nil
			}
		}
		return getSet(h, "pool").Status.ReadyReplicas == 2, nil
	})
}

// With when-failed in the template and a class whose every create fails
// for good, each failed Machine is preserved and never reaches the
// early-failure backoff: the set replaces at most spec.replicas of them,
// then creates nothing more until their preservation ends.
func TestPreservedEarlyFailuresAreReplacedAtMostReplicasTimes(t *testing.T) {
	h := newHarness(t)
	h.Class("broken", `{"region":"local","zones":["local-a"],"faults":{"create":{"code":"InvalidArgument"}}}`)
	set(h, "pool", 1, "broken", func(ms *v1alpha1.MachineSet) {
		ms.Spec.Template.Metadata.Annotations = map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveWhenFailed}
	})
	h.Eventually(30*time.Second, "the set to stop replacing (or to overshoot)", func() (bool, error) {
		if len(machinesOf(h, "pool")) > 2 {
			return true, nil
		}
		c := meta.FindStatusCondition(getSet(h, "pool").Status.Conditions, v1alpha1.ReplicaFailureCondition)
		return c != nil && c.Status == metav1.ConditionTrue && strings.Contains(c.Message, "preserved Machines failed before running"), nil
	})
	ms := machinesOf(h, "pool")
	if len(ms) != 2 {
		t.Fatalf("%d Machines, want 2: the first failed one and its one replacement", len(ms))
	}
	for i := range ms {
		if c := preserved(&ms[i]); c == nil || c.Status != metav1.ConditionTrue || ms[i].Status.Phase != v1alpha1.PhaseFailed {
			t.Errorf("Machine %s is %s with Preserved %+v, want Failed and preserved", ms[i].Name, ms[i].Status.Phase, c)
		}
	}
	if got := getSet(h, "pool").Status.PreservedReplicas; got != 2 {
		t.Errorf("status.preservedReplicas = %d, want 2", got)
	}
}

// A Node that says preserve "false" keeps its Machine from being kept
// automatically: the machine controller writes Preserved=False
// (PreserveOptedOut), so the set, which sees only the Machine and its
// automatic mark, deletes and replaces it instead of keeping it forever.
func TestNodeOptOutOverridesAutoPreservation(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	set(h, "pool", 1, "small", func(ms *v1alpha1.MachineSet) {
		ms.Spec.AutoPreserveFailedMax = ptr.To[int32](1)
		ms.Spec.Template.Spec.Lifecycle.HealthTimeout = &metav1.Duration{Duration: time.Second}
	})
	waitReady(h, "pool", 1, 60*time.Second)
	m := liveMachines(h, "pool")[0]
	annotateNode(h, m.Status.NodeRef.Name, v1alpha1.PreserveAnnotation, v1alpha1.PreserveNever)
	failNode(h, &m)
	h.Eventually(40*time.Second, "the failed Machine gone and its replacement Ready", func() (bool, error) {
		for _, x := range machinesOf(h, "pool") {
			if x.Name == m.Name {
				return false, nil
			}
		}
		return getSet(h, "pool").Status.ReadyReplicas == 1, nil
	})
	if n := countEvents(h, m.Name, "PreservationStarted"); n != 0 {
		t.Errorf("%d PreservationStarted Events for a Machine whose Node opted out", n)
	}
}
