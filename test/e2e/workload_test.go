package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// createWorkload creates a Deployment "work" of replicas pods spread over
// the scenario's Nodes (at most one pod of difference between two Nodes
// that can take pods) and a PodDisruptionBudget keeping minAvailable of
// them, then waits until every pod is available.
func (s *scenario) createWorkload(replicas, minAvailable int32) {
	s.t.Helper()
	labels := map[string]string{"app": "work"}
	honor := corev1.NodeInclusionPolicyHonor
	s.create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: s.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector: map[string]string{"pool": s.ns},
					TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
						MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
						LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, NodeTaintsPolicy: &honor,
					}},
					Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	})
	min := intstr.FromInt32(minAvailable)
	s.create(&policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: s.ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	})
	s.waitWorkload(replicas, 2*time.Minute)
}

// waitWorkload waits until the workload's Deployment has every pod
// available and up to date, and returns its pods.
func (s *scenario) waitWorkload(replicas int32, bound time.Duration) []corev1.Pod {
	s.t.Helper()
	pods, err := s.workloadAvailable(replicas, bound)
	if err != nil {
		s.t.Fatalf("%s: no %d available pods of the workload within %s (last: %v)", s.ns, replicas, bound, err)
	}
	return pods
}

// workloadAvailable is waitWorkload that says why not instead of failing
// the test.
func (s *scenario) workloadAvailable(replicas int32, bound time.Duration) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, bound, true, func(context.Context) (bool, error) {
		d := &appsv1.Deployment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: "work"}, d); err != nil {
			last = err
			return false, nil
		}
		st := d.Status
		if st.ObservedGeneration != d.Generation || st.AvailableReplicas != replicas || st.UpdatedReplicas != replicas || st.Replicas != replicas {
			last = fmt.Errorf("deployment status %+v", st)
			return false, nil
		}
		list := &corev1.PodList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(s.ns), client.MatchingLabels{"app": "work"}); err != nil {
			last = err
			return false, nil
		}
		pods, last = list.Items, fmt.Errorf("%d pods", len(list.Items))
		return len(pods) == int(replicas), nil
	})
	if err != nil {
		return nil, last
	}
	return pods, nil
}

// podAvailable reports whether a pod counts for its disruption budget:
// Ready and not being deleted.
func podAvailable(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// budgetKept is the invariant that at least min pods of the workload are
// available.
func budgetKept(min int) check {
	return func(r *recorder) string {
		n := 0
		for _, p := range r.podsLocked() {
			if p.Labels["app"] == "work" && podAvailable(p) {
				n++
			}
		}
		if n < min {
			return fmt.Sprintf("only %d pods of the workload available, the budget keeps %d", n, min)
		}
		return ""
	}
}

// describeWorkload says where the workload stands, for a failure: its
// ReplicaSets' counts and each pod's Node, phase, readiness and, when it
// is not scheduled, why.
func (s *scenario) describeWorkload() string {
	var b strings.Builder
	sets := &appsv1.ReplicaSetList{}
	if err := k8s.List(context.Background(), sets, client.InNamespace(s.ns), client.MatchingLabels{"app": "work"}); err != nil {
		return err.Error()
	}
	for _, rs := range sets.Items {
		st := rs.Status
		fmt.Fprintf(&b, "ReplicaSet %s: spec %d, observed generation %d of %d, replicas %d, ready %d, available %d\n",
			rs.Name, ptr.Deref(rs.Spec.Replicas, 0), st.ObservedGeneration, rs.Generation, st.Replicas, st.ReadyReplicas, st.AvailableReplicas)
	}
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(s.ns), client.MatchingLabels{"app": "work"}); err != nil {
		return b.String() + err.Error()
	}
	for _, p := range pods.Items {
		fmt.Fprintf(&b, "pod %s node=%q phase=%s available=%t deleting=%t", p.Name, p.Spec.NodeName, p.Status.Phase, podAvailable(&p), p.DeletionTimestamp != nil)
		for _, c := range p.Status.Conditions {
			if c.Status != corev1.ConditionTrue {
				fmt.Fprintf(&b, " %s=%s(%s: %s)", c.Type, c.Status, c.Reason, c.Message)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}
