package machine_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

const (
	preDrainHook     = v1alpha1.PreDrainHookAnnotationPrefix + "backup"
	preTerminateHook = v1alpha1.PreTerminateHookAnnotationPrefix + "audit"
)

func TestDeletionWaitsForHooksAndResumesAfterRestarts(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("small", simSpec)
	h.Machine("m", "small", func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{preDrainHook: "", preTerminateHook: ""}
	})
	running := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	nodeName := running.Status.NodeRef.Name
	h.DeleteMachine("m")

	m := h.WaitStep("m", v1alpha1.StepPreDrainHooks)
	if m.Status.Phase != v1alpha1.PhaseTerminating {
		t.Errorf("phase = %s; want Terminating", m.Status.Phase)
	}
	node, err := h.Node(nodeName)
	if err != nil || node.Spec.Unschedulable {
		t.Fatalf("the Node must be left alone while a pre-drain hook holds (err %v, unschedulable %v)", err, node.Spec.Unschedulable)
	}

	h.StopManager() // a crash while blocked on the hook
	h.StartManager()
	h.RemoveAnnotation("m", preDrainHook)
	m = h.WaitStep("m", v1alpha1.StepPreTerminateHooks)
	if !metaTrue(m, v1alpha1.DrainedCondition) {
		t.Errorf("reached the pre-terminate hooks without the Drained condition: %+v", m.Status.Conditions)
	}
	if node, err = h.Node(nodeName); err != nil || !node.Spec.Unschedulable {
		t.Fatalf("the Node must be cordoned and still exist before the VM is deleted (err %v)", err)
	}
	if len(h.VMs("m")) != 1 {
		t.Fatal("the VM was deleted before the pre-terminate hook was removed")
	}

	h.StopManager()
	h.StartManager()
	h.RemoveAnnotation("m", preTerminateHook)
	h.WaitGone("m")
	if _, err := h.Node(nodeName); !apierrors.IsNotFound(err) {
		t.Errorf("the Node still exists after its Machine is gone (err %v)", err)
	}
	if len(h.VMs("m")) != 0 {
		t.Error("the VM still exists after its Machine is gone")
	}
	if n := len(h.Sim.Cloud().History()); n != 1 {
		t.Errorf("%d VMs were ever created for one Machine", n)
	}
}

func TestBlockedDrainResumesAfterRestartAndForceDeletionEndsIt(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("small", simSpec)
	h.Machine("m", "small", func(m *v1alpha1.Machine) {
		m.Spec.Lifecycle.MaxEvictRetries = ptr.To[int32](1000)
	})
	running := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	nodeName := running.Status.NodeRef.Name

	// A pod on the Node whose disruption budget allows no eviction.
	pod := h.UnevictablePod("critical", nodeName)

	// A volume attached to the Node: released only once the VM is gone.
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "va-" + h.NS},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: nodeName,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv-" + h.NS)}},
	}
	h.Create(va)

	h.DeleteMachine("m")
	var attempts int32
	h.Eventually(20*time.Second, "the drain to be refused a few times", func() (bool, error) {
		m := h.Get("m")
		if m.Status.Deletion == nil || m.Status.Deletion.Drain == nil {
			return false, nil
		}
		attempts = m.Status.Deletion.Drain.Attempts
		return m.Status.Deletion.Step == v1alpha1.StepDrain && attempts >= 2, nil
	})

	h.StopManager()
	h.StartManager()
	h.Eventually(20*time.Second, "the drain to go on where it stopped", func() (bool, error) {
		m := h.Get("m")
		return m.Status.Deletion.Step == v1alpha1.StepDrain && m.Status.Deletion.Drain.Attempts > attempts, nil
	})
	if _, err := h.Node(nodeName); err != nil {
		t.Fatalf("the Node must not be deleted while its drain is blocked: %v", err)
	}
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(va), &storagev1.VolumeAttachment{}); err != nil {
		t.Fatalf("the VolumeAttachment must stay while the VM runs: %v", err)
	}

	m := h.Get("m")
	patch := client.MergeFrom(m.DeepCopy())
	m.Annotations = map[string]string{v1alpha1.ForceDeletionAnnotation: "true"}
	if err := controllertest.Env.Client.Patch(context.Background(), m, patch); err != nil {
		t.Fatal(err)
	}
	h.WaitGone("m")
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
		t.Errorf("the pod survived a forced drain (err %v)", err)
	}
	h.ExpectEvent("ForceDrain", "m")
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(va), &storagev1.VolumeAttachment{}); !apierrors.IsNotFound(err) {
		t.Errorf("the Node's VolumeAttachment outlived its VM and Node (err %v)", err)
	}
	h.ExpectEvent("VolumesReleased", "m")
}

func TestDeletionRetriesDriverErrors(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("flaky-delete", `{"region":"local","zones":["local-a"],"faults":{"delete":{"code":"Unavailable","count":2}}}`)
	h.Machine("m", "flaky-delete", nil)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	h.DeleteMachine("m")
	h.ExpectEvent("DeleteFailed", "m")
	h.WaitGone("m")
	if len(h.VMs("m")) != 0 {
		t.Fatal("the VM survived its Machine")
	}
}

func TestNodeTemplateChangesAreMergedThreeWays(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("small", simSpec)
	h.Machine("m", "small", func(m *v1alpha1.Machine) {
		m.Spec.NodeTemplate.Metadata.Labels = map[string]string{"role": "web", "tier": "front"}
	})
	nodeName := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second).Status.NodeRef.Name

	// Someone else labels the Node; then the template drops tier and changes role.
	node, err := h.Node(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	nodePatch := client.MergeFrom(node.DeepCopy())
	node.Labels["team"] = "payments"
	if err := controllertest.Env.Client.Patch(context.Background(), node, nodePatch); err != nil {
		t.Fatal(err)
	}
	m := h.Get("m")
	patch := client.MergeFrom(m.DeepCopy())
	m.Spec.NodeTemplate.Metadata.Labels = map[string]string{"role": "api"}
	if err := controllertest.Env.Client.Patch(context.Background(), m, patch); err != nil {
		t.Fatal(err)
	}
	h.Eventually(15*time.Second, "the Node to follow the template", func() (bool, error) {
		node, err := h.Node(nodeName)
		if err != nil {
			return false, err
		}
		_, tier := node.Labels["tier"]
		return node.Labels["role"] == "api" && !tier && node.Labels["team"] == "payments", nil
	})
}

func metaTrue(m *v1alpha1.Machine, condType string) bool {
	for _, c := range m.Status.Conditions {
		if c.Type == condType {
			return c.Status == metav1.ConditionTrue
		}
	}
	return false
}

func TestRestartDuringVMDeletion(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("slow-delete", `{"region":"local","zones":["local-a"],"faults":{"delete":{"latency":"3s"}}}`)
	h.Machine("m", "slow-delete", nil)
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	h.DeleteMachine("m")
	h.WaitStep("m", v1alpha1.StepDeleteInfrastructure)
	h.StopManager() // cancels the DeleteMachine call in flight
	if len(h.VMs("m")) != 1 {
		t.Fatal("the VM vanished although its deletion was cut short")
	}
	h.StartManager()
	h.WaitGone("m")
	if len(h.VMs("m")) != 0 || len(h.Sim.Cloud().History()) != 1 {
		t.Fatalf("after the restart: %d live VMs, %d ever created; want 0 and 1", len(h.VMs("m")), len(h.Sim.Cloud().History()))
	}
}

func TestNodeTriggerDeletionAnnotationDeletesTheMachine(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("small", simSpec)
	h.Machine("m", "small", nil)
	nodeName := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second).Status.NodeRef.Name
	node, err := h.Node(nodeName)
	if err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(node.DeepCopy())
	node.Annotations[v1alpha1.NodeTriggerDeletionAnnotation] = "true"
	if err := controllertest.Env.Client.Patch(context.Background(), node, patch); err != nil {
		t.Fatal(err)
	}
	h.WaitGone("m")
	if _, err := h.Node(nodeName); !apierrors.IsNotFound(err) {
		t.Errorf("the Node survived (err %v)", err)
	}
}
