package machine_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// hangAfterDelete deletes the VM, then, while hang is set, does not answer
// until the manager stops: a crash right after the VM went away, before
// the manager learned it.
type hangAfterDelete struct {
	driver.Driver
	hang    atomic.Bool
	deleted chan struct{}
}

func (d *hangAfterDelete) DeleteMachine(ctx context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	resp, err := d.Driver.DeleteMachine(ctx, req)
	if err != nil || !d.hang.Load() {
		return resp, err
	}
	close(d.deleted)
	<-ctx.Done()
	return nil, ctx.Err()
}

// A deletion that reaches the VM within one reconcile writes no status
// before DeleteMachine (docs/machine-phases.md). It relies on the steps
// before being redone by a restarted manager: a crash during the call must
// leave a Machine whose next manager drains the Node again and deletes it
// only once drained.
func TestDeletionUnrecordedBeforeVMDeleteRedrainsAfterCrash(t *testing.T) {
	wrap := &hangAfterDelete{deleted: make(chan struct{})}
	wrap.hang.Store(true)
	h := controllertest.New(t, controllertest.Options{Machine: func(r *machine.Reconciler) {
		wrap.Driver = r.Drivers["sim"]
		r.Drivers = map[string]driver.Driver{"sim": wrap}
	}})
	h.Class("small", simSpec)
	h.Machine("m", "small", nil)
	nodeName := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second).Status.NodeRef.Name
	h.DeleteMachine("m")
	<-wrap.deleted
	if d := h.Get("m").Status.Deletion; d != nil {
		t.Errorf("status.deletion written before the VM delete of a deletion that got there in one reconcile: %+v", d)
	}
	h.StopManager() // the crash, the VM gone
	wrap.hang.Store(false)

	// A pod the next drain must evict, and a budget that refuses it.
	ctx := context.Background()
	labels := map[string]string{"app": "late"}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: h.NS, Labels: labels},
		Spec: corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
			Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}},
	}
	h.Create(pod)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "late", Namespace: h.NS},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels}},
	}
	h.Create(pdb)
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := controllertest.Env.Client.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pdb.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: pdb.Generation, CurrentHealthy: 1, DesiredHealthy: 1, ExpectedPods: 1}
	if err := controllertest.Env.Client.Status().Update(ctx, pdb); err != nil {
		t.Fatal(err)
	}

	h.StartManager()
	h.Eventually(20*time.Second, "the restarted manager to drain again", func() (bool, error) {
		d := h.Get("m").Status.Deletion
		return d != nil && d.Drain != nil && d.Drain.Attempts >= 2, nil
	})
	if d := h.Get("m").Status.Deletion; d.Step != v1alpha1.StepDrain {
		t.Fatalf("step = %s after the restart; want %s", d.Step, v1alpha1.StepDrain)
	}
	if _, err := h.Node(nodeName); err != nil {
		t.Fatalf("the Node was deleted before its drain after the restart: %v", err)
	}

	if err := controllertest.Env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	h.WaitGone("m")
	if _, err := h.Node(nodeName); !apierrors.IsNotFound(err) {
		t.Errorf("the Node outlived its Machine (err %v)", err)
	}
	h.ExpectEvent("NodeDeleted", "m")
}
