package integration

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
)

// Pods without volumes are evicted all in the first round and disappear
// (kwok removes them like a kubelet would); DaemonSet pods, mirror pods and
// finished pods are left alone.
func TestDrainEvictsPodsAndLeavesDaemonSetMirrorAndFinishedPods(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, true)
	ds := newDaemonSet(t, ns)
	var plain []*corev1.Pod
	for _, name := range []string{"web-0", "web-1", "web-2"} {
		plain = append(plain, newPod(t, ns, node.Name, name))
	}
	agent := newPod(t, ns, node.Name, "agent-x", ownedBy(ds, "DaemonSet"))
	static := newPod(t, ns, node.Name, "etcd-"+node.Name, mirror)
	done := newPod(t, ns, node.Name, "job-done")
	waitRunning(t, append(plain, agent, static, done)...)
	done.Status.Phase = corev1.PodSucceeded
	if err := env.Client.Status().Update(t.Context(), done); err != nil {
		t.Fatal(err)
	}

	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, MaxEvictRetries: 3}
	first := step(t, status, opts)
	if first.Evicted != 3 || first.Deleted != 0 || first.Blocked != 0 || first.Failed != 0 {
		t.Errorf("first step: evicted %d, deleted %d, blocked %d, failed %d; want all 3 plain pods evicted at once",
			first.Evicted, first.Deleted, first.Blocked, first.Failed)
	}
	if !strings.Contains(first.Message, "evicted 3 pods") {
		t.Errorf("first step message %q does not say it evicted 3 pods", first.Message)
	}
	if first.Done && first.Remaining != 0 {
		t.Errorf("first step is done with %d pods remaining", first.Remaining)
	}

	last := stepUntilDone(t, status, opts, func(res drain.Result) {
		if res.Deleted != 0 || res.Blocked != 0 {
			t.Errorf("a step deleted %d or saw %d blocked pods; nothing blocks here", res.Deleted, res.Blocked)
		}
	})
	if last.Remaining != 0 || !strings.Contains(last.Message, "drained") {
		t.Errorf("last step: remaining %d, message %q", last.Remaining, last.Message)
	}
	mustBeGone(t, plain...)
	mustExistUntouched(t, agent, static, done)
	if status.Attempts != 0 || status.VolumeWait != nil {
		t.Errorf("status %+v, want no refused rounds and no volume wait", status)
	}
}

// A pod already being deleted is waited for, not evicted again, and the
// drain is not done until it is gone.
func TestDrainWaitsForLeavingPod(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, false) // no kwok: the deleted pod stays until the test lets it go
	pod := newPod(t, ns, node.Name, "slow", withFinalizer)
	if err := env.Client.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name}
	for range 2 {
		res := step(t, status, opts)
		if res.Done || res.Evicted != 0 || res.Deleted != 0 || res.Remaining != 1 {
			t.Fatalf("step with a terminating pod: %+v, want not done, nothing evicted, 1 remaining", res)
		}
		if !strings.Contains(res.Message, "1 pod terminating") {
			t.Errorf("message %q does not say it waits for the pod", res.Message)
		}
	}

	// A forced step deletes it again with grace period 0; the finalizer
	// still holds it, so the drain is done only once the finalizer goes.
	opts.Force = true
	if res := step(t, status, opts); res.Done || res.Deleted != 1 {
		t.Fatalf("forced step: %+v, want the terminating pod deleted again, not done", res)
	}
	got, ok := exists(t, pod)
	if !ok || got.DeletionGracePeriodSeconds == nil || *got.DeletionGracePeriodSeconds != 0 {
		t.Fatalf("after the forced step the pod has deletion grace period %v, want 0", got.DeletionGracePeriodSeconds)
	}
	if res := step(t, status, opts); res.Deleted != 0 || res.Done {
		t.Fatalf("second forced step: %+v, want no repeated delete and not done", res)
	}
	releaseFinalizers(t, got)
	stepUntilDone(t, status, opts, nil)
	mustBeGone(t, pod)
}

// The drain finds the Node's pods by spec.nodeName in every namespace, and
// touches no pod of another Node.
func TestDrainSeesPodsInAllNamespaces(t *testing.T) {
	node := newNode(t, true)
	a := newPod(t, newNamespace(t), node.Name, "a")
	b := newPod(t, newNamespace(t), node.Name, "b")
	other := newNode(t, false)
	elsewhere := newPod(t, newNamespace(t), other.Name, "elsewhere")
	waitRunning(t, a, b)
	status := &v1alpha1.DrainStatus{}
	if res := step(t, status, drain.Options{NodeName: node.Name}); res.Evicted != 2 {
		t.Errorf("evicted %d pods, want both pods of the node", res.Evicted)
	}
	stepUntilDone(t, status, drain.Options{NodeName: node.Name}, nil)
	mustBeGone(t, a, b)
	mustExistUntouched(t, elsewhere)
}

// A deleted pod whose containers stopped is still waited for: the kubelet
// gives it a terminal phase first and removes it only once it has
// unmounted its volumes and torn down its sandbox. Only then may the VM
// go (a real kubelet's VM was deleted between the two before).
func TestDrainWaitsForDeletedPodInTerminalPhase(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, false) // no kwok: the deleted pod stays until the test lets it go
	pod := newPod(t, ns, node.Name, "stopping", withFinalizer)
	if err := env.Client.Delete(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	got, ok := exists(t, pod)
	if !ok {
		t.Fatal("the deleted pod is gone already")
	}
	got.Status.Phase = corev1.PodFailed // what the kubelet writes once the containers stopped
	if err := env.Client.Status().Update(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name}
	if res := step(t, status, opts); res.Done || res.Remaining != 1 || res.Evicted != 0 {
		t.Fatalf("step with a deleted pod in phase Failed: %+v, want not done, 1 remaining, nothing evicted", res)
	}
	// The kubelet's last word: the delete with grace period 0.
	if err := env.Client.Delete(t.Context(), pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	got, _ = exists(t, pod)
	releaseFinalizers(t, got)
	stepUntilDone(t, status, opts, nil)
	mustBeGone(t, pod)
}
