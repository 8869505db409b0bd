package integration

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// timeout bounds every wait for the control plane, kwok or the disruption
// controller.
const timeout = 60 * time.Second

// newNode creates a Node. A kwok Node is made Ready by kwok, which then
// plays its kubelet; without kwok, pods on the Node stay as the test leaves
// them (a pod being deleted stays until a test removes it).
func newNode(t *testing.T, kwok bool) *corev1.Node {
	t.Helper()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + rand.String(6)}}
	if kwok {
		node.Annotations = map[string]string{testenv.KwokNodeAnnotation: testenv.KwokNodeAnnotationValue}
	}
	if err := env.Client.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	if kwok {
		testenv.Eventually(t, timeout, "kwok to make node "+node.Name+" Ready", func() (bool, error) {
			err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), node)
			return err == nil && testenv.NodeReady(node), err
		})
	}
	return node
}

// newNamespace creates a namespace for one test. Nothing deletes it
// afterwards: without the namespace controller it would only hang in
// Terminating, and its pods are on the test's own Node.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "drain-"}}
	if err := env.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// podOption changes a pod before it is created.
type podOption func(*corev1.Pod)

// withLabels labels the pod.
func withLabels(labels map[string]string) podOption {
	return func(p *corev1.Pod) { p.Labels = labels }
}

// withClaim mounts the PersistentVolumeClaim claim.
func withClaim(claim string) podOption {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
		}})
	}
}

// ownedBy makes owner the pod's controller.
func ownedBy(owner client.Object, kind string) podOption {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: "apps/v1", Kind: kind, Name: owner.GetName(), UID: owner.GetUID(), Controller: ptr.To(true),
		}}
	}
}

// mirror makes the pod a mirror pod, as the kubelet creates for a static pod.
func mirror(p *corev1.Pod) {
	p.Annotations = map[string]string{"kubernetes.io/config.mirror": "hash"}
}

// withFinalizer keeps the pod in the API after its deletion until the test
// removes the finalizer.
func withFinalizer(p *corev1.Pod) {
	p.Finalizers = []string{"test.millwright.dev/keep"}
}

// deletingDisruptionTarget reads pod, which must be being deleted (held by
// withFinalizer), and returns its DisruptionTarget condition, nil if none.
func deletingDisruptionTarget(t *testing.T, pod *corev1.Pod) *corev1.PodCondition {
	t.Helper()
	got, ok := exists(t, pod)
	if !ok || got.DeletionTimestamp == nil {
		t.Fatalf("pod %s: want it being deleted, held by its finalizer", pod.Name)
	}
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == corev1.DisruptionTarget {
			return &got.Status.Conditions[i]
		}
	}
	return nil
}

// releaseFinalizersAtEnd removes the finalizers of pods when the test ends,
// as they are then: pods held by withFinalizer so that their last version
// could be read.
func releaseFinalizersAtEnd(t *testing.T, pods ...*corev1.Pod) {
	t.Cleanup(func() { // t.Context is done by now
		for _, pod := range pods {
			got := &corev1.Pod{}
			if env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), got) == nil {
				got.Finalizers = nil
				_ = env.Client.Update(context.Background(), got)
			}
		}
	})
}

// releaseFinalizers removes the finalizers of pod (as last read) with a
// merge patch: kwok writes the pod's status concurrently.
func releaseFinalizers(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	release := client.MergeFrom(pod.DeepCopy())
	pod.Finalizers = nil
	if err := env.Client.Patch(t.Context(), pod, release); err != nil {
		t.Fatal(err)
	}
}

// newPod creates a pod bound to node (no scheduler runs).
func newPod(t *testing.T, ns, node, name string, opts ...podOption) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "app:1"}},
		},
	}
	for _, o := range opts {
		o(pod)
	}
	if err := env.Client.Create(t.Context(), pod); err != nil {
		t.Fatalf("creating pod %s/%s: %v", ns, name, err)
	}
	return pod
}

// waitRunning waits until kwok reports the pods Running and Ready. The
// Eviction API consults budgets only for running pods, and the disruption
// controller counts only ready ones as healthy.
func waitRunning(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		testenv.Eventually(t, timeout, "pod "+pod.Name+" to run", func() (bool, error) {
			if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), pod); err != nil {
				return false, err
			}
			return pod.Status.Phase == corev1.PodRunning, nil
		})
	}
}

// markRunning reports pod Running, as kwok would, for a pod on a Node
// that is not kwok's.
func markRunning(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	pod.Status.Phase = corev1.PodRunning
	if err := env.Client.Status().Update(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
}

// exists reports whether the pod is still in the API, and its current state.
func exists(t *testing.T, pod *corev1.Pod) (*corev1.Pod, bool) {
	t.Helper()
	got := &corev1.Pod{}
	err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), got)
	if apierrors.IsNotFound(err) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return got, true
}

// mustExistUntouched fails unless the pod exists and its deletion has not started.
func mustExistUntouched(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		got, ok := exists(t, pod)
		switch {
		case !ok:
			t.Errorf("pod %s was removed, want it kept", pod.Name)
		case got.DeletionTimestamp != nil:
			t.Errorf("pod %s is being deleted, want it kept", pod.Name)
		}
	}
}

// deletionStarted reports whether the pod is being deleted or already gone:
// kwok removes a pod without finalizers moments after its deletion starts,
// so "gone" must count as well. One read decides.
func deletionStarted(t *testing.T, pod *corev1.Pod) bool {
	t.Helper()
	got, ok := exists(t, pod)
	return !ok || got.DeletionTimestamp != nil
}

// waitGone waits until the pods no longer exist (kwok removes pods whose
// deletion started).
func waitGone(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		testenv.Eventually(t, timeout, "pod "+pod.Name+" to be gone", func() (bool, error) {
			err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pod), &corev1.Pod{})
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		})
	}
}

// mustBeGone fails unless the pods no longer exist.
func mustBeGone(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		if _, ok := exists(t, pod); ok {
			t.Errorf("pod %s still exists, want it gone", pod.Name)
		}
	}
}

// step runs one drain step and fails the test on error.
func step(t *testing.T, status *v1alpha1.DrainStatus, opts drain.Options) drain.Result {
	t.Helper()
	res, err := drain.Step(t.Context(), env.Client, status, opts)
	if err != nil {
		t.Fatalf("Step: %v", err)
	}
	t.Logf("Step: done=%v evicted=%d deleted=%d blocked=%d failed=%d remaining=%d attempts=%d requeue=%s: %s",
		res.Done, res.Evicted, res.Deleted, res.Blocked, res.Failed, res.Remaining, status.Attempts, res.RequeueAfter, res.Message)
	return res
}

// stepUntilDone calls Step, as the controller would on each requeue (but
// without waiting RequeueAfter), until the drain is done, and returns the
// last result. stop, if not nil, fails the test when a step's result or
// status breaks an invariant.
func stepUntilDone(t *testing.T, status *v1alpha1.DrainStatus, opts drain.Options, check func(drain.Result)) drain.Result {
	t.Helper()
	var last drain.Result
	testenv.Eventually(t, timeout, "the drain to finish", func() (bool, error) {
		last = step(t, status, opts)
		if check != nil {
			check(last)
		}
		return last.Done, nil
	})
	return last
}

// newDaemonSet creates a DaemonSet object to own a pod; no controller runs it.
func newDaemonSet(t *testing.T, ns string) *appsv1.DaemonSet {
	t.Helper()
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "agent"},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "agent", Image: "agent:1"}}},
			},
		},
	}
	if err := env.Client.Create(t.Context(), ds); err != nil {
		t.Fatal(err)
	}
	return ds
}

// newPDB creates a PodDisruptionBudget and waits until the disruption
// controller in kube-controller-manager has computed its status for the
// current spec with the given number of healthy pods: the Eviction API
// refuses everything while the status is stale.
func newPDB(t *testing.T, ns string, labels map[string]string, minAvailable, healthy int32) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "budget"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:     &metav1.LabelSelector{MatchLabels: labels},
			MinAvailable: ptr.To(intstr.FromInt32(minAvailable)),
		},
	}
	if err := env.Client.Create(t.Context(), pdb); err != nil {
		t.Fatal(err)
	}
	waitPDB(t, pdb, healthy)
	return pdb
}

// waitPDB waits for the disruption controller to observe the PDB's current
// generation with the given number of healthy pods.
func waitPDB(t *testing.T, pdb *policyv1.PodDisruptionBudget, healthy int32) {
	t.Helper()
	testenv.Eventually(t, timeout, "the disruption controller to compute the PodDisruptionBudget's status", func() (bool, error) {
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(pdb), pdb); err != nil {
			return false, err
		}
		s := pdb.Status
		return s.ObservedGeneration == pdb.Generation && s.CurrentHealthy == healthy, nil
	})
}
