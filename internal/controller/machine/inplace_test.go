package machine_test

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

func classSpec(name, version string) v1alpha1.MachineSpec {
	return v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: name}, Version: version}
}

// The driver path: the target class is applied by UpdateMachine, the Node
// is cordoned while it happens and uncordoned after — but a Node someone
// else had cordoned stays cordoned — and the Machine moves to S2 in one
// write, with the VM it had.
func TestInPlaceDriverPathMovesTheMachine(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c1", `{"region":"local","zones":["local-a"],"tags":{"team":"infra"}}`)
	// The update takes a while, so the test sees the Node cordoned during it.
	c2 := h.Class("c2", `{"region":"local","zones":["local-a"],"tags":{"team":"payments"},"faults":{"update":{"latency":"2s"}}}`)
	w := newInPlaceWorld(h, classSpec("c1", ""), classSpec("c2", ""), nil, "a", "b")
	// A person cordoned b's Node before the update.
	editNode(h, "b", func(n *corev1.Node) { n.Spec.Unschedulable = true }, false)
	providerID := h.Get("a").Spec.ProviderID
	succeeded := machine.InPlaceUpdates(v1alpha1.InPlaceSucceeded)

	w.pick("a")
	w.pick("b")
	h.Eventually(20*time.Second, "a's update in phase Updating with its Node cordoned by the update", func() (bool, error) {
		m, n := h.Get("a"), nodeOf(h, "a")
		return m.Status.InPlaceUpdate != nil && m.Status.InPlaceUpdate.Phase == v1alpha1.InPlaceUpdating &&
			n.Spec.Unschedulable && n.Annotations[v1alpha1.NodeInPlaceCordonAnnotation] == "true", nil
	})
	h.Eventually(30*time.Second, "both Machines to be moved", func() (bool, error) {
		a, b := h.Get("a"), h.Get("b")
		return a.Annotations[v1alpha1.InPlaceTargetAnnotation] == "" && b.Annotations[v1alpha1.InPlaceTargetAnnotation] == "", nil
	})
	for _, name := range []string{"a", "b"} {
		m := w.expectMoved(t, name)
		if !jsonSame(m.Annotations[v1alpha1.LastAppliedProviderSpecAnnotation], string(c2.Spec.ProviderSpec.Raw)) {
			t.Errorf("%s: last applied providerSpec %s; want c2's", name, m.Annotations[v1alpha1.LastAppliedProviderSpecAnnotation])
		}
		vm := h.VMs(name)[0]
		if vm.ClassName != "c2" || vm.Tags["team"] != "payments" || vm.Updates != 1 {
			t.Errorf("%s: VM class %s, tags %v, %d updates; want c2's tags applied once", name, vm.ClassName, vm.Tags, vm.Updates)
		}
	}
	if h.Get("a").Spec.ProviderID != providerID {
		t.Error("the providerID changed")
	}
	if n := len(h.Sim.Cloud().History()); n != 2 {
		t.Errorf("%d VMs were ever created for 2 Machines: the update replaced one", n)
	}
	h.Eventually(30*time.Second, "a's Node uncordoned, b's still cordoned", func() (bool, error) {
		a, b := nodeOf(h, "a"), nodeOf(h, "b")
		_, aMark := a.Annotations[v1alpha1.NodeInPlaceCordonAnnotation]
		_, bMark := b.Annotations[v1alpha1.NodeInPlaceCordonAnnotation]
		return !a.Spec.Unschedulable && !aMark && b.Spec.Unschedulable && !bMark, nil
	})
	h.ExpectEvent(machine.ReasonInPlaceSucceeded, "a")
	if n := machine.InPlaceUpdates(v1alpha1.InPlaceSucceeded) - succeeded; n != 2 {
		t.Errorf("millwright_machine_inplace_update_duration_seconds counted %d successes; want 2", n)
	}
}

// FailedPrecondition from UpdateMachine (here: another image, which a
// running VM cannot take) refuses the update: the Machine stays where it
// is, the annotation names the refused target, and the orchestration
// replaces it.
func TestInPlaceRefusedByTheDriver(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c1", `{"region":"local","zones":["local-a"],"image":"ubuntu-24.04"}`)
	h.Class("c2", `{"region":"local","zones":["local-a"],"image":"ubuntu-26.04"}`)
	w := newInPlaceWorld(h, classSpec("c1", ""), classSpec("c2", ""), nil, "m")
	refused := machine.InPlaceUpdates(v1alpha1.InPlaceRefused)
	w.pick("m")
	m := waitUpdate(h, "m", v1alpha1.InPlaceRefused, 30*time.Second)
	if n := machine.InPlaceUpdates(v1alpha1.InPlaceRefused) - refused; n != 1 {
		t.Errorf("millwright_machine_inplace_update_duration_seconds counted %d refusals; want 1", n)
	}
	if m.Spec.Class.Name != "c1" || metav1.GetControllerOf(m).UID != w.s1.UID || m.Annotations[v1alpha1.InPlaceTargetAnnotation] != w.s2.Name {
		t.Errorf("a refused Machine moved: class %s, owner %+v, annotations %v", m.Spec.Class.Name, m.OwnerReferences, m.Annotations)
	}
	if u := m.Status.InPlaceUpdate; !strings.Contains(u.Message, "FailedPrecondition") || !strings.Contains(u.Message, "providerSpec.image") || u.FinishedAt == nil {
		t.Errorf("status.inPlaceUpdate = %+v; want the driver's reason", u)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.InPlaceUpdateCondition); c == nil || c.Status != metav1.ConditionFalse || c.Reason != machine.ReasonInPlaceRefused {
		t.Errorf("condition InPlaceUpdate = %+v", c)
	}
	if vm := h.VMs("m")[0]; vm.Updates != 0 || vm.ClassName != "c1" {
		t.Errorf("the refused update changed the VM: %d updates, class %s", vm.Updates, vm.ClassName)
	}
	h.ExpectEvent(machine.ReasonInPlaceRefused, "m")
}

// A terminal driver error fails the update: the Machine stays in S1,
// cordoned. A person retries by removing the annotation: the controller
// uncordons the Node and clears status.inPlaceUpdate.
func TestInPlaceFailedThenRetriedByRemovingTheAnnotation(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c1", simSpec)
	h.Class("c2", `{"region":"local","zones":["local-a","local-b"],"tags":{"x":"y"},"faults":{"update":{"code":"Internal","message":"the hypervisor said no"}}}`)
	w := newInPlaceWorld(h, classSpec("c1", ""), classSpec("c2", ""), nil, "m")
	w.pick("m")
	m := waitUpdate(h, "m", v1alpha1.InPlaceFailed, 30*time.Second)
	if !strings.Contains(m.Status.InPlaceUpdate.Message, "the hypervisor said no") {
		t.Errorf("message %q; want the driver's", m.Status.InPlaceUpdate.Message)
	}
	if m.Spec.Class.Name != "c1" || metav1.GetControllerOf(m).UID != w.s1.UID || m.Annotations[v1alpha1.InPlaceTargetAnnotation] != w.s2.Name {
		t.Errorf("a failed Machine moved: class %s, owner %+v", m.Spec.Class.Name, m.OwnerReferences)
	}
	if n := nodeOf(h, "m"); !n.Spec.Unschedulable {
		t.Error("the Node of a failed update is not cordoned")
	}
	h.ExpectEvent(machine.ReasonInPlaceFailed, "m")

	h.RemoveAnnotation("m", v1alpha1.InPlaceTargetAnnotation)
	h.Eventually(20*time.Second, "the update cleared and the Node uncordoned", func() (bool, error) {
		m, n := h.Get("m"), nodeOf(h, "m")
		return m.Status.InPlaceUpdate == nil && meta.FindStatusCondition(m.Status.Conditions, v1alpha1.InPlaceUpdateCondition) == nil &&
			!n.Spec.Unschedulable && n.Annotations[v1alpha1.NodeInPlaceCordonAnnotation] == "", nil
	})
	h.ExpectEvent(machine.ReasonInPlaceCleared, "m")
}

// A transient driver error is retried with the backoff: the update goes
// through on the third call.
func TestInPlaceRetriesTransientDriverErrors(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c1", simSpec)
	h.Class("c2", `{"region":"local","zones":["local-a","local-b"],"tags":{"x":"y"},"faults":{"update":{"code":"Unavailable","count":2}}}`)
	w := newInPlaceWorld(h, classSpec("c1", ""), classSpec("c2", ""), nil, "m")
	w.pick("m")
	h.Eventually(30*time.Second, "the Machine to move", func() (bool, error) {
		return h.Get("m").Annotations[v1alpha1.InPlaceTargetAnnotation] == "", nil
	})
	w.expectMoved(t, "m")
	if vm := h.VMs("m")[0]; vm.Updates != 1 || vm.Tags["x"] != "y" {
		t.Errorf("VM: %d updates, tags %v; want the third call applied", vm.Updates, vm.Tags)
	}
	h.ExpectEvent("UpdateFailed", "m")
}

// The node path: the Node is handed the target version, the test plays
// the node agent, and the Machine moves once the Node runs it; the
// Machine's status.nodeVersion follows the Node's kubeletVersion. No
// driver call: the class does not change.
func TestInPlaceNodePathWithTheAgent(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c1", simSpec)
	w := newInPlaceWorld(h, classSpec("c1", "v1.36.3"), classSpec("c1", "v1.36.4"), nil, "m")
	if v := h.Get("m").Status.NodeVersion; v != "v1.36.3-sim" {
		t.Errorf("status.nodeVersion = %q; want the Node's kubeletVersion", v)
	}
	w.pick("m")
	playAgent(h, "m", "v1.36.4")
	h.Eventually(30*time.Second, "the Machine to move", func() (bool, error) {
		return h.Get("m").Annotations[v1alpha1.InPlaceTargetAnnotation] == "", nil
	})
	m := w.expectMoved(t, "m")
	h.Eventually(30*time.Second, "status.nodeVersion, the Node's keys and cordon", func() (bool, error) {
		m, n := h.Get("m"), nodeOf(h, "m")
		_, label := n.Labels[v1alpha1.NodeUpdateLabel]
		_, version := n.Labels[v1alpha1.NodeUpdateVersionLabel]
		return m.Status.NodeVersion == "v1.36.4" && !label && !version && !n.Spec.Unschedulable, nil
	})
	if vm := h.VMs("m")[0]; vm.Updates != 0 {
		t.Errorf("the driver was called %d times for a version-only update", vm.Updates)
	}
	_ = m
}

// playAgent waits for the Node to be handed version and answers as the
// node agent does: in-progress, then the kubelet reports the version, then
// succeeded.
func playAgent(h *controllertest.Harness, name, version string) {
	h.T.Helper()
	waitHandedOver(h, name, version)
	editNode(h, name, func(n *corev1.Node) { n.Labels[v1alpha1.NodeUpdateLabel] = v1alpha1.NodeUpdateInProgress }, false)
	editNode(h, name, func(n *corev1.Node) { n.Status.NodeInfo.KubeletVersion = version }, true)
	editNode(h, name, func(n *corev1.Node) { n.Labels[v1alpha1.NodeUpdateLabel] = v1alpha1.NodeUpdateSucceeded }, false)
}

// waitHandedOver waits until the Machine waits for its (cordoned) Node's
// agent to apply version.
func waitHandedOver(h *controllertest.Harness, name, version string) {
	h.T.Helper()
	h.Eventually(20*time.Second, "the Node handed "+version, func() (bool, error) {
		m, n := h.Get(name), nodeOf(h, name)
		return m.Status.InPlaceUpdate != nil && m.Status.InPlaceUpdate.Phase == v1alpha1.InPlaceWaitingForNode &&
			n.Spec.Unschedulable && n.Labels[v1alpha1.NodeUpdateLabel] == v1alpha1.NodeUpdateReady &&
			n.Labels[v1alpha1.NodeUpdateVersionLabel] == version, nil
	})
}

// The agent's failure fails the update with its message.
func TestInPlaceNodeAgentFailure(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c1", simSpec)
	w := newInPlaceWorld(h, classSpec("c1", "v1.36.3"), classSpec("c1", "v1.99.0"), nil, "m")
	w.pick("m")
	waitHandedOver(h, "m", "v1.99.0")
	editNode(h, "m", func(n *corev1.Node) {
		n.Labels[v1alpha1.NodeUpdateLabel] = v1alpha1.NodeUpdateFailed
		n.Annotations[v1alpha1.NodeUpdateMessageAnnotation] = "v1.99.0 is newer than the API server"
	}, false)
	m := waitUpdate(h, "m", v1alpha1.InPlaceFailed, 20*time.Second)
	if !strings.Contains(m.Status.InPlaceUpdate.Message, "v1.99.0 is newer than the API server") {
		t.Errorf("message %q; want the agent's", m.Status.InPlaceUpdate.Message)
	}
	if m.Spec.Version != "v1.36.3" || metav1.GetControllerOf(m).UID != w.s1.UID {
		t.Errorf("a failed Machine moved: version %s, owner %+v", m.Spec.Version, m.OwnerReferences)
	}
}

// updateTimeout, from the MachineDeployment owning S2, fails an update
// whose Node never answers.
func TestInPlaceUpdateTimeout(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c1", simSpec)
	sel := map[string]string{"app": "web"}
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "md", Namespace: h.NS},
		Spec: v1alpha1.MachineDeploymentSpec{
			Selector: v1alpha1.LabelSelector{MatchLabels: sel},
			Template: v1alpha1.MachineTemplateSpec{Metadata: v1alpha1.ObjectMeta{Labels: sel}, Spec: classSpec("c1", "v1.36.4")},
			Strategy: v1alpha1.MachineDeploymentStrategy{Type: v1alpha1.InPlaceStrategy,
				InPlace: &v1alpha1.InPlaceMachineDeployment{UpdateTimeout: &metav1.Duration{Duration: 3 * time.Second}}},
		},
	}
	h.Create(md)
	w := newInPlaceWorld(h, classSpec("c1", "v1.36.3"), classSpec("c1", "v1.36.4"), md, "m")
	w.pick("m")
	m := waitUpdate(h, "m", v1alpha1.InPlaceFailed, 30*time.Second)
	if u := m.Status.InPlaceUpdate; !strings.Contains(u.Message, "timed out after 3s in phase WaitingForNode") {
		t.Errorf("message %q; want the timeout in WaitingForNode", u.Message)
	}
	if m.Spec.Version != "v1.36.3" {
		t.Errorf("a timed-out Machine moved to version %s", m.Spec.Version)
	}
}

// A manager restarted while the Node's agent works resumes from the
// status: the agent's answer, given while no manager ran, finishes the
// update, which is not started again — the driver, which had applied the
// class before the restart, is not called again.
func TestInPlaceResumesAfterRestart(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c1", simSpec)
	h.Class("c2", `{"region":"local","zones":["local-a","local-b"],"tags":{"team":"payments"}}`)
	w := newInPlaceWorld(h, classSpec("c1", "v1.36.3"), classSpec("c2", "v1.36.4"), nil, "m")
	w.pick("m")
	waitHandedOver(h, "m", "v1.36.4")
	started := h.Get("m").Status.InPlaceUpdate.StartedAt

	h.StopManager()
	editNode(h, "m", func(n *corev1.Node) { n.Status.NodeInfo.KubeletVersion = "v1.36.4" }, true)
	editNode(h, "m", func(n *corev1.Node) { n.Labels[v1alpha1.NodeUpdateLabel] = v1alpha1.NodeUpdateSucceeded }, false)
	h.StartManager()

	h.Eventually(30*time.Second, "the Machine to move", func() (bool, error) {
		return h.Get("m").Annotations[v1alpha1.InPlaceTargetAnnotation] == "", nil
	})
	m := w.expectMoved(t, "m")
	if !m.Status.InPlaceUpdate.StartedAt.Equal(started) {
		t.Errorf("the update started again at %s (first at %s)", m.Status.InPlaceUpdate.StartedAt, started)
	}
	if vm := h.VMs("m")[0]; vm.Updates != 1 || vm.ClassName != "c2" {
		t.Errorf("the VM got %d updates (class %s); want the one made before the restart", vm.Updates, vm.ClassName)
	}
	h.Eventually(30*time.Second, "the Node uncordoned", func() (bool, error) { return !nodeOf(h, "m").Spec.Unschedulable, nil })
}

// The in-place drain honours disruption budgets — never deleting a pod a
// budget protects, whatever maxEvictRetries says — and its progress
// survives a restart; once the budget allows, the update goes on.
func TestInPlaceDrainHonoursBudgetsAcrossARestart(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c1", simSpec)
	from := classSpec("c1", "")
	from.Lifecycle.MaxEvictRetries = ptr.To[int32](1) // a deletion would delete the pod after one refused round
	w := newInPlaceWorld(h, from, classSpec("c1", "v1.36.3-sim"), nil, "m")
	node := nodeOf(h, "m")
	pod := blockedPod(h, node.Name)

	w.pick("m")
	var attempts int32
	h.Eventually(30*time.Second, "the drain to be refused a few rounds", func() (bool, error) {
		m := h.Get("m")
		u := m.Status.InPlaceUpdate
		if u == nil || u.Drain == nil {
			return false, nil
		}
		attempts = u.Drain.Attempts
		return u.Phase == v1alpha1.InPlaceDraining && attempts >= 3, nil
	})
	current := &corev1.Pod{}
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), current); err != nil || !current.DeletionTimestamp.IsZero() {
		t.Fatalf("the pod a budget protects was deleted during an in-place drain (err %v)", err)
	}
	if msg := h.Get("m").Status.InPlaceUpdate.Message; !strings.Contains(msg, "PodDisruptionBudget") {
		t.Errorf("message %q; want the budget named", msg)
	}

	h.StopManager()
	h.StartManager()
	h.Eventually(20*time.Second, "the drain to count on after the restart", func() (bool, error) {
		u := h.Get("m").Status.InPlaceUpdate
		return u.Drain != nil && u.Drain.Attempts != attempts, nil
	})
	if got := h.Get("m").Status.InPlaceUpdate.Drain.Attempts; got != attempts+1 {
		t.Errorf("after the restart the drain is at round %d; want %d (it started over)", got, attempts+1)
	}

	// The budget goes; the pod is evicted and (playing its kubelet) leaves.
	if err := controllertest.Env.Client.Delete(context.Background(), &policyPDB{ObjectMeta: metav1.ObjectMeta{Name: "critical", Namespace: h.NS}}); err != nil {
		t.Fatal(err)
	}
	h.Eventually(20*time.Second, "the pod evicted", func() (bool, error) {
		p := &corev1.Pod{}
		err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), p)
		return err == nil && !p.DeletionTimestamp.IsZero(), err
	})
	if err := controllertest.Env.Client.Delete(context.Background(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	h.Eventually(30*time.Second, "the Machine to move", func() (bool, error) {
		return h.Get("m").Annotations[v1alpha1.InPlaceTargetAnnotation] == "", nil
	})
	w.expectMoved(t, "m")
}

func jsonSame(a, b string) bool {
	return machine.JSONEqual(a, b)
}
