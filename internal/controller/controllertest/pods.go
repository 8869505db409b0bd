package controllertest

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

// UnevictablePod creates a Running, Ready pod called name on nodeName
// whose PodDisruptionBudget (of the same name) allows no eviction: a
// graceful drain of the Node never ends. No kubelet or disruption
// controller runs in the harness, so it plays their part and writes the
// pod's and the budget's status itself. The drain package's own tests
// run kwok and kube-controller-manager instead.
func (h *Harness) UnevictablePod(name, nodeName string) *corev1.Pod {
	h.T.Helper()
	labels := map[string]string{"app": name} // namespaced: only this test's pod
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
	}
	h.Create(pod)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	h.Create(pdb)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := Env.Client.Status().Update(context.Background(), pod); err != nil {
		h.T.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if err := Env.Client.Status().Update(context.Background(), pdb); err != nil {
		h.T.Fatal(err)
	}
	return pod
}
