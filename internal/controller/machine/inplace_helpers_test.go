package machine_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// inPlaceWorld plays the MachineDeployment controller's part of an
// in-place update (docs/in-place-updates.md): an old set S1 owning the
// Machines, a new set S2 with the target template, and the annotation
// naming S2 on the Machines it picks. No MachineSet controller runs: the
// sets are only read.
type inPlaceWorld struct {
	h      *controllertest.Harness
	s1, s2 *v1alpha1.MachineSet
}

// setLabels are a set's template labels: the set's own (only-<hash>) go
// when a Machine moves, the shared ones stay.
func setLabels(hash string) map[string]string {
	return map[string]string{"app": "web", v1alpha1.TemplateHashLabel: hash, "only-" + hash: "yes"}
}

// newSet creates a MachineSet named Prefix+name with a template of spec.
func newSet(h *controllertest.Harness, name, hash string, spec v1alpha1.MachineSpec, owner *v1alpha1.MachineDeployment) *v1alpha1.MachineSet {
	h.T.Helper()
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + name, Namespace: h.NS, Labels: map[string]string{v1alpha1.MachineDeploymentNameLabel: "md"}},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: 1,
			Selector: v1alpha1.LabelSelector{MatchLabels: setLabels(hash)},
			Template: v1alpha1.MachineTemplateSpec{Metadata: v1alpha1.ObjectMeta{Labels: setLabels(hash)}, Spec: spec},
		},
	}
	if owner != nil {
		ms.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineDeployment",
			Name: owner.Name, UID: owner.UID, Controller: ptr.To(true)}}
	}
	h.Create(ms)
	return ms
}

// newInPlaceWorld makes S1 (class, version) with the Running Machines
// named, and S2 with the target template.
func newInPlaceWorld(h *controllertest.Harness, from, to v1alpha1.MachineSpec, owner *v1alpha1.MachineDeployment, machines ...string) *inPlaceWorld {
	h.T.Helper()
	w := &inPlaceWorld{h: h, s1: newSet(h, "s1", "h1", from, nil), s2: newSet(h, "s2", "h2", to, owner)}
	for _, name := range machines {
		h.Machine(name, from.Class.Name, func(m *v1alpha1.Machine) {
			m.Spec = *from.DeepCopy()
			m.Labels = setLabels("h1")
			m.Labels[v1alpha1.MachineSetNameLabel] = w.s1.Name
			m.Labels["person"] = "kept" // not a template's: survives the move
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet",
				Name: w.s1.Name, UID: w.s1.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		})
	}
	for _, name := range machines {
		h.WaitPhase(name, v1alpha1.PhaseRunning, 30*time.Second)
	}
	return w
}

// pick sets the in-place target annotation on the Machine, as the
// orchestration's last write does.
func (w *inPlaceWorld) pick(name string) {
	w.h.T.Helper()
	annotate(w.h, name, v1alpha1.InPlaceTargetAnnotation, w.s2.Name)
}

func annotate(h *controllertest.Harness, name, key, value string) {
	h.T.Helper()
	m := h.Get(name)
	patch := client.MergeFrom(m.DeepCopy())
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[key] = value
	if err := controllertest.Env.Client.Patch(context.Background(), m, patch); err != nil {
		h.T.Fatal(err)
	}
}

// waitUpdate waits for the Machine's in-place update to reach phase.
func waitUpdate(h *controllertest.Harness, name string, phase v1alpha1.InPlaceUpdatePhase, timeout time.Duration) *v1alpha1.Machine {
	h.T.Helper()
	var m *v1alpha1.Machine
	h.Eventually(timeout, "in-place update phase "+string(phase)+" of "+name, func() (bool, error) {
		m = h.Get(name)
		return m.Status.InPlaceUpdate != nil && m.Status.InPlaceUpdate.Phase == phase, nil
	})
	return m
}

// nodeOf returns the Machine's Node.
func nodeOf(h *controllertest.Harness, name string) *corev1.Node {
	h.T.Helper()
	m := h.Get(name)
	if m.Status.NodeRef == nil {
		h.T.Fatalf("machine %s has no Node", name)
	}
	n, err := h.Node(m.Status.NodeRef.Name)
	if err != nil {
		h.T.Fatal(err)
	}
	return n
}

// editNode changes the Machine's Node (status too when status is set),
// as a person, the kubelet or the node agent would.
func editNode(h *controllertest.Harness, name string, edit func(*corev1.Node), status bool) {
	h.T.Helper()
	h.Eventually(30*time.Second, "the Node of "+name+" to take the edit", func() (bool, error) {
		n := nodeOf(h, name)
		patch := client.MergeFromWithOptions(n.DeepCopy(), client.MergeFromWithOptimisticLock{})
		edit(n)
		var err error
		if status {
			err = controllertest.Env.Client.Status().Patch(context.Background(), n, patch)
		} else {
			err = controllertest.Env.Client.Patch(context.Background(), n, patch)
		}
		if apierrors.IsConflict(err) {
			return false, nil // the sim's "kubelet" wrote meanwhile
		}
		return err == nil, err
	})
}

// expectMoved checks that the Machine now belongs to S2 with its template.
func (w *inPlaceWorld) expectMoved(t *testing.T, name string) *v1alpha1.Machine {
	t.Helper()
	m := w.h.Get(name)
	tpl := w.s2.Spec.Template.Spec
	if tpl.Class != nil && (m.Spec.Class == nil || m.Spec.Class.Name != tpl.Class.Name) {
		t.Errorf("spec.class = %+v; want %s", m.Spec.Class, tpl.Class.Name)
	}
	if m.Spec.Version != tpl.Version {
		t.Errorf("spec.version = %q; want %q", m.Spec.Version, tpl.Version)
	}
	owner := metav1.GetControllerOf(m)
	if owner == nil || owner.UID != w.s2.UID || len(m.OwnerReferences) != 1 {
		t.Errorf("owner references %+v; want S2 as the only controller", m.OwnerReferences)
	}
	if m.Labels[v1alpha1.TemplateHashLabel] != "h2" || m.Labels["only-h2"] != "yes" || m.Labels["only-h1"] != "" ||
		m.Labels[v1alpha1.MachineSetNameLabel] != w.s2.Name || m.Labels["person"] != "kept" || m.Labels["app"] != "web" {
		t.Errorf("labels %v; want S2's template labels, S1's own gone, the person's kept", m.Labels)
	}
	if _, ok := m.Annotations[v1alpha1.InPlaceTargetAnnotation]; ok {
		t.Error("the in-place target annotation is still there")
	}
	if u := m.Status.InPlaceUpdate; u == nil || u.Phase != v1alpha1.InPlaceSucceeded || u.FinishedAt == nil || u.TargetSet != w.s2.Name {
		t.Errorf("status.inPlaceUpdate = %+v; want Succeeded towards S2", m.Status.InPlaceUpdate)
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.InPlaceUpdateCondition); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("condition InPlaceUpdate = %+v; want True", c)
	}
	return m
}

type policyPDB = policyv1.PodDisruptionBudget

// blockedPod puts a Ready pod on the Node whose disruption budget
// ("critical") allows no eviction. No kubelet or disruption controller runs
// in this harness: the test plays their part, as TestBlockedDrainResumesAfterRestartAndForceDeletionEndsIt does.
func blockedPod(h *controllertest.Harness, nodeName string) *corev1.Pod {
	h.T.Helper()
	labels := map[string]string{"app": "critical"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "critical", Namespace: h.NS, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
	}
	h.Create(pod)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "critical", Namespace: h.NS},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	h.Create(pdb)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := controllertest.Env.Client.Status().Update(context.Background(), pod); err != nil {
		h.T.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if err := controllertest.Env.Client.Status().Update(context.Background(), pdb); err != nil {
		h.T.Fatal(err)
	}
	return pod
}
