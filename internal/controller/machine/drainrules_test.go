package machine_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// TestDeletionAppliesTheMachineDrainRules: the deletion drains by the
// MachineDrainRules of the Machine's namespace that select it. A pod it
// waits for holds the drain, named in the status, until it completes; a
// skipped pod is never evicted; a rule for other Machines does not apply
// (it would win by name and evict the skipped pod).
func TestDeletionAppliesTheMachineDrainRules(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("small", simSpec)
	h.Machine("m", "small", func(m *v1alpha1.Machine) { m.Labels = map[string]string{"pool": "web"} })
	running := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	nodeName := running.Status.NodeRef.Name

	rule := func(name, pool, app string, behavior v1alpha1.DrainBehavior) *v1alpha1.MachineDrainRule {
		return &v1alpha1.MachineDrainRule{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS},
			Spec: v1alpha1.MachineDrainRuleSpec{
				Drain:    v1alpha1.MachineDrainRuleDrainConfig{Behavior: behavior},
				Machines: []v1alpha1.MachineDrainRuleMachineSelector{{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": pool}}}},
				Pods:     []v1alpha1.MachineDrainRulePodSelector{{Selector: &v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": app}}}},
			},
		}
	}
	h.Create(rule("a-db-pool", "db", "log", v1alpha1.DrainBehaviorDrain))
	h.Create(rule("skip-logs", "web", "log", v1alpha1.DrainBehaviorSkip))
	h.Create(rule("wait-jobs", "web", "job", v1alpha1.DrainBehaviorWaitCompleted))
	pod := func(name, app string) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: h.NS, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		}
		h.Create(p)
		return p
	}
	job, logs := pod("job", "job"), pod("logs", "log")

	h.DeleteMachine("m")
	h.Eventually(20*time.Second, "the drain to wait for the job", func() (bool, error) {
		m := h.Get("m")
		d := m.Status.Deletion
		return d != nil && d.Step == v1alpha1.StepDrain && d.Drain != nil &&
			slices.Equal(d.Drain.BlockingPods, []string{h.NS + "/job"}), nil
	})
	// No kubelet runs here: play its part, the job completes.
	job.Status.Phase = corev1.PodSucceeded
	if err := controllertest.Env.Client.Status().Update(context.Background(), job); err != nil {
		t.Fatal(err)
	}
	h.WaitGone("m")
	got := &corev1.Pod{}
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(logs), got); err != nil || got.DeletionTimestamp != nil {
		t.Errorf("the skipped pod was evicted (err %v, deletion %v)", err, got.DeletionTimestamp)
	}
}
