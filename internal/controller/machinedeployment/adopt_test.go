package machinedeployment_test

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// TestAdoptsOrphanSet checks that a MachineSet without a controller that the
// deployment's selector matches is adopted (found among the orphans of the
// owner index, not the deployment's own sets) and, its template being
// another, rolled over like any old set.
func TestAdoptsOrphanSet(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.Class("old", controllertest.SimSpec)
	labels := map[string]string{"app": "web"}
	legacy := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + "legacy", Namespace: h.NS, Labels: labels},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: 1,
			Selector: v1alpha1.LabelSelector{MatchLabels: labels},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: labels},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "old"}},
			},
		},
	}
	h.Create(legacy)
	h.deployment("web", 2, "small", nil)
	md := h.waitComplete("web", 90*time.Second)

	got := &v1alpha1.MachineSet{}
	if err := controllertest.Env.Client.Get(ctx, client.ObjectKeyFromObject(legacy), got); err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(got); ref == nil || ref.UID != md.UID {
		t.Fatalf("the orphan set's controller is %+v, want the deployment", ref)
	}
	if got.Spec.Replicas != 0 {
		t.Errorf("the adopted old set keeps %d replicas, want 0", got.Spec.Replicas)
	}
}
