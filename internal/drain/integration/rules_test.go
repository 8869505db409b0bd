package integration

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// TestDrainRulesEvictInOrderSkipAndWaitForCompletion drains a Node with
// order-1 pods (they linger while terminating, held by a finalizer),
// order-2 pods, pods skipped by a rule and by the pod label, and a pod the
// drain waits to complete. A watcher of the namespace's pods asserts that
// no order-2 pod's deletion starts before every order-1 pod is gone, and
// that the skipped and waited-for pods are never touched.
func TestDrainRulesEvictInOrderSkipAndWaitForCompletion(t *testing.T) {
	ns := newNamespace(t)
	labelNamespace(t, ns, map[string]string{"tier": "test"})
	node := newNode(t, true)

	first := []*corev1.Pod{
		newPod(t, ns, node.Name, "cache-0", withLabels(map[string]string{"app": "cache"}), withFinalizer),
		newPod(t, ns, node.Name, "cache-1", withLabels(map[string]string{"app": "cache"}), withFinalizer),
	}
	second := []*corev1.Pod{
		newPod(t, ns, node.Name, "db-0", withLabels(map[string]string{"app": "db"})),
		newPod(t, ns, node.Name, "db-1", withLabels(map[string]string{"app": "db"})),
	}
	skipped := []*corev1.Pod{
		newPod(t, ns, node.Name, "log", withLabels(map[string]string{"app": "log"})),
		newPod(t, ns, node.Name, "pinned", withLabels(map[string]string{"app": "db", v1alpha1.DrainLabel: v1alpha1.DrainLabelSkip})),
	}
	job := newPod(t, ns, node.Name, "job", withLabels(map[string]string{"app": "job"}))
	waitRunning(t, append(append(append(first, second...), skipped...), job)...)

	rules, err := drain.RulesFor([]v1alpha1.MachineDrainRule{
		drainRule("a-cache", "cache", nil, v1alpha1.DrainBehaviorDrain, ptr.To[int32](1)),
		// Loses to a-cache (first by name): the message says so.
		drainRule("z-cache", "cache", nil, v1alpha1.DrainBehaviorDrain, ptr.To[int32](3)),
		drainRule("db", "db", nil, v1alpha1.DrainBehaviorDrain, ptr.To[int32](2)),
		drainRule("log", "log", map[string]string{"tier": "test"}, v1alpha1.DrainBehaviorSkip, nil),
		drainRule("job", "job", nil, v1alpha1.DrainBehaviorWaitCompleted, nil),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Decisions, what kubectl millwright drain status shows, is the plan
	// the Steps below follow; the log rule selects by namespace labels.
	decisions, err := drain.Decisions(t.Context(), env.Client, node.Name, rules)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range decisions {
		got = append(got, fmt.Sprintf("%s %s %d", d.Pod.Name, d.Behavior, d.Order))
	}
	if want := []string{"log Skip 0", "pinned Skip 0", "cache-0 Drain 1", "cache-1 Drain 1", "db-0 Drain 2", "db-1 Drain 2",
		"job WaitCompleted 0"}; !equal(got, want) {
		t.Errorf("Decisions: %v, want %v", got, want)
	}
	w := watchPods(t, ns)
	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, Rules: rules}

	res := step(t, status, opts)
	if order := ptr.Deref(status.Order, -1); res.Evicted != 2 || order != 1 {
		t.Fatalf("first step evicted %d pods on order %d (-1: none); want both order-1 pods on order 1", res.Evicted, order)
	}
	if !strings.Contains(res.Message, "a-cache applies") {
		t.Errorf("message %q does not report the conflict of a-cache and z-cache", res.Message)
	}
	// Terminating order-1 pods hold order 2 back, however often the drain looks.
	for range 3 {
		res = step(t, status, opts)
		if order := ptr.Deref(status.Order, -1); res.Evicted != 0 || order != 1 {
			t.Errorf("a step evicted %d pods on order %d (-1: none) while order-1 pods terminate", res.Evicted, order)
		}
	}
	if want := []string{ns + "/cache-0", ns + "/cache-1", ns + "/job"}; !equal(status.BlockingPods, want) || status.BlockingPodCount != 3 {
		t.Errorf("blocking pods %v (%d), want %v", status.BlockingPods, status.BlockingPodCount, want)
	}
	mustExistUntouched(t, second...)
	releaseFinalizer(t, first[0])
	waitGone(t, first[0])
	step(t, status, opts)
	mustExistUntouched(t, second...)
	releaseFinalizer(t, first[1])

	// Order 2 goes once order 1 is gone; then the drain waits for the job only.
	testenv.Eventually(t, timeout, "order 2 to be evicted and gone", func() (bool, error) {
		res = step(t, status, opts)
		if res.Done {
			t.Fatal("the drain finished while the job it waits for still runs")
		}
		return res.Remaining == 1, nil
	})
	if status.Order != nil || !equal(status.BlockingPods, []string{ns + "/job"}) {
		t.Errorf("with only the job left: order %v, blocking %v; want no order and the job", status.Order, status.BlockingPods)
	}
	if !strings.Contains(res.Message, "waiting for 1 pod to complete ("+ns+"/job)") {
		t.Errorf("message %q does not say the drain waits for the job", res.Message)
	}
	mustExistUntouched(t, job)
	mustExistUntouched(t, skipped...)

	job, _ = exists(t, job)
	job.Status.Phase = corev1.PodSucceeded
	if err := env.Client.Status().Update(t.Context(), job); err != nil {
		t.Fatal(err)
	}
	res = step(t, status, opts)
	if !res.Done || !strings.Contains(res.Message, "2 pods skipped by drain rules") {
		t.Errorf("after the job completed: done %v, message %q; want done with 2 pods skipped", res.Done, res.Message)
	}
	mustExistUntouched(t, append(skipped, job)...)

	w.checkOrder(t, names(first), names(second), append(names(skipped), job.Name))
}

// drainRule is a MachineDrainRule for every Machine selecting pods
// labelled app=<app>, and namespaces labelled nsLabels when set.
func drainRule(name, app string, nsLabels map[string]string, behavior v1alpha1.DrainBehavior, order *int32) v1alpha1.MachineDrainRule {
	ps := v1alpha1.MachineDrainRulePodSelector{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": app}}}
	if nsLabels != nil {
		ps.NamespaceSelector = &v1alpha1.LabelSelector{MatchLabels: nsLabels}
	}
	return v1alpha1.MachineDrainRule{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1alpha1.MachineDrainRuleSpec{
			Drain: v1alpha1.MachineDrainRuleDrainConfig{Behavior: behavior, Order: order},
			Pods:  []v1alpha1.MachineDrainRulePodSelector{ps},
		},
	}
}

func labelNamespace(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: name}, ns); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(ns.DeepCopy())
	ns.Labels = labels
	if err := env.Client.Patch(t.Context(), ns, patch); err != nil {
		t.Fatal(err)
	}
}

// releaseFinalizer removes the test's finalizer, letting a deleted pod go.
func releaseFinalizer(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	got, ok := exists(t, pod)
	if !ok {
		t.Fatalf("pod %s is gone before its finalizer was released", pod.Name)
	}
	patch := client.MergeFrom(got.DeepCopy())
	got.Finalizers = nil
	if err := env.Client.Patch(t.Context(), got, patch); err != nil {
		t.Fatal(err)
	}
}

// podWatch records, in the API server's order, when each pod's deletion
// started and when it was gone.
type podWatch struct {
	mu     sync.Mutex
	events []podEvent
}

type podEvent struct {
	pod string
	// gone: deleted; otherwise the deletion started.
	gone bool
}

// watchPods starts recording the deletions of the namespace's pods.
func watchPods(t *testing.T, ns string) *podWatch {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	wi, err := wc.Watch(t.Context(), &corev1.PodList{}, client.InNamespace(ns))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(wi.Stop)
	w := &podWatch{}
	go func() {
		for ev := range wi.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			switch {
			case ev.Type == watch.Deleted:
				w.add(podEvent{pod: pod.Name, gone: true})
			case pod.DeletionTimestamp != nil:
				w.add(podEvent{pod: pod.Name})
			}
		}
	}()
	return w
}

func (w *podWatch) add(e podEvent) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.events = append(w.events, e)
}

// checkOrder fails unless every pod of first was gone before the deletion
// of any pod of second started, and no pod of untouched was deleted. The
// watch delivers events in the order the API server applied them; the
// last order-2 deletion reached the API before the test's last step read
// it, so the watcher has seen it once it reports it.
func (w *podWatch) checkOrder(t *testing.T, first, second, untouched []string) {
	t.Helper()
	testenv.Eventually(t, timeout, "the watcher to see the order-2 pods go", func() (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		gone := 0
		for _, e := range w.events {
			if e.gone && contains(second, e.pod) {
				gone++
			}
		}
		return gone == len(second), nil
	})
	w.mu.Lock()
	defer w.mu.Unlock()
	firstGone := 0
	for i, e := range w.events {
		switch {
		case contains(first, e.pod) && e.gone:
			firstGone++
		case contains(second, e.pod) && firstGone < len(first):
			t.Errorf("event %d: the deletion of order-2 pod %s started while %d order-1 pods were still there (events %+v)",
				i, e.pod, len(first)-firstGone, w.events)
			return
		case contains(untouched, e.pod):
			t.Errorf("pod %s, which the drain must leave, was deleted", e.pod)
		}
	}
}

func names(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestDrainRulesNextOrderWaitsForVolumes: the next order starts only once
// the volumes of the previous order's last pod have detached, not merely
// once the pod is gone.
func TestDrainRulesNextOrderWaitsForVolumes(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, true)
	handle := newVolume(t, ns, "data-pg-0")
	pg := newPod(t, ns, node.Name, "pg-0", withLabels(map[string]string{"app": "db"}), withClaim("data-pg-0"))
	web := newPod(t, ns, node.Name, "web", withLabels(map[string]string{"app": "web"}))
	waitRunning(t, pg, web)
	setAttached(t, node, handle)

	rules, err := drain.RulesFor([]v1alpha1.MachineDrainRule{
		drainRule("db", "db", nil, v1alpha1.DrainBehaviorDrain, ptr.To[int32](1)),
		drainRule("web", "web", nil, v1alpha1.DrainBehaviorDrain, ptr.To[int32](2)),
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, Rules: rules, VolumeIDs: unimplemented, VolumeDetachTimeout: time.Hour}
	if res := step(t, status, opts); res.Evicted != 1 || status.VolumeWait == nil {
		t.Fatalf("first step evicted %d pods, volume wait %+v; want pg-0 evicted and waited for", res.Evicted, status.VolumeWait)
	}
	waitGone(t, pg)
	res := step(t, status, opts)
	if res.Evicted != 0 || !strings.Contains(res.Message, "order 2 waits for the volumes of the previous order") {
		t.Errorf("with pg-0 gone and its volume attached: evicted %d, message %q; want order 2 held", res.Evicted, res.Message)
	}
	if !equal(status.BlockingPods, []string{ns + "/pg-0"}) || ptr.Deref(status.Order, -1) != 1 {
		t.Errorf("blocking %v on order %d, want pg-0 on order 1", status.BlockingPods, ptr.Deref(status.Order, -1))
	}
	mustExistUntouched(t, web)
	setAttached(t, node)
	stepUntilDone(t, status, opts, nil)
	mustBeGone(t, web)
}
