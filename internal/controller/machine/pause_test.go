package machine_test

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// A paused Machine makes no VM and says why; removing the annotation
// resumes it.
func TestPausedAnnotationStopsAndResumes(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c", simSpec)
	h.Machine("m", "c", func(m *v1alpha1.Machine) {
		m.Annotations = map[string]string{v1alpha1.PausedAnnotation: "true"}
	})
	waitCondition(h, "m", v1alpha1.PausedCondition, metav1.ConditionTrue, "Paused")
	h.Consistently(2*time.Second, "a paused Machine without a VM", func() (bool, error) { return len(h.VMs("m")) == 0, nil })
	h.RemoveAnnotation("m", v1alpha1.PausedAnnotation)
	m := h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
	if meta.FindStatusCondition(m.Status.Conditions, v1alpha1.PausedCondition) != nil {
		t.Fatal("the Paused condition stayed after resuming")
	}
}

// spec.paused on the MachineDeployment pauses its Machines too.
func TestPausedDeploymentPausesMachines(t *testing.T) {
	h := newHarness(t, nil)
	h.Class("c", simSpec)
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + "md", Namespace: h.NS},
		Spec: v1alpha1.MachineDeploymentSpec{
			Paused:   true,
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"app": "x"}},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "c"}},
			},
		},
	}
	h.Create(md)
	h.Machine("m", "c", func(m *v1alpha1.Machine) {
		m.Labels = map[string]string{v1alpha1.MachineDeploymentNameLabel: md.Name}
	})
	waitCondition(h, "m", v1alpha1.PausedCondition, metav1.ConditionTrue, "Paused")
	if vms := h.VMs("m"); len(vms) != 0 {
		t.Fatalf("a Machine of a paused deployment got %d VMs", len(vms))
	}
	patch := client.MergeFrom(md.DeepCopy())
	md.Spec.Paused = false
	if err := controllertest.Env.Client.Patch(context.Background(), md, patch); err != nil {
		t.Fatal(err)
	}
	h.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)
}
