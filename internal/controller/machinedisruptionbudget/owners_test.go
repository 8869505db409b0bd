package machinedisruptionbudget_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestExpectedIsTheDeploymentsSize: Machines of a deployment count against
// its spec.replicas, so a Machine that was never created is unavailable,
// and scaling the deployment recounts the budget.
func TestExpectedIsTheDeploymentsSize(t *testing.T) {
	ns := start(t)
	labels := pool("web")
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: 3,
			Selector: v1alpha1.LabelSelector{MatchLabels: labels},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: labels},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "small"}},
			},
		},
	}
	if err := env.Client.Create(ctx, md); err != nil {
		t.Fatal(err)
	}
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns, Labels: labels},
		Spec: v1alpha1.MachineSetSpec{
			Replicas: 3,
			Selector: md.Spec.Selector,
			Template: md.Spec.Template,
		},
	}
	controlledBy(t, ms, md, "MachineDeployment")
	if err := env.Client.Create(ctx, ms); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web-a", "web-b"} {
		m := machine(t, ns, name, labels, true)
		controlledBy(t, m, ms, "MachineSet")
		if err := env.Client.Update(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	budget(t, ns, "web", labels, intstr.FromInt32(1))

	// The third Machine failed to be created: one unavailable of 3.
	want := "expected 3 max 1 unavailable 1 allowed 0"
	waitStatus(t, ns, "web", want, func(b *v1alpha1.MachineDisruptionBudget) bool { return counts(b) == want })

	// Scaled to the Machines it has: nothing is missing any more.
	if err := env.Client.Patch(ctx, md, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":2}}`))); err != nil {
		t.Fatal(err)
	}
	want = "expected 2 max 1 unavailable 0 allowed 1"
	waitStatus(t, ns, "web", want, func(b *v1alpha1.MachineDisruptionBudget) bool { return counts(b) == want })
	if err := env.Client.Patch(ctx, md, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"replicas":5}}`))); err != nil {
		t.Fatal(err)
	}
	want = "expected 5 max 1 unavailable 3 allowed 0"
	waitStatus(t, ns, "web", want, func(b *v1alpha1.MachineDisruptionBudget) bool { return counts(b) == want })

	// A Machine of the set that the budget does not select: the
	// deployment is selected in part, so its selected Machines count
	// alone. Its event does not wake the budget, but is noted for it: the
	// next recount (woken by web-a turning NotReady) counts it.
	other := machine(t, ns, "web-c", pool("other"), true)
	controlledBy(t, other, ms, "MachineSet")
	if err := env.Client.Update(ctx, other); err != nil {
		t.Fatal(err)
	}
	webA := &v1alpha1.Machine{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web-a"}, webA); err != nil {
		t.Fatal(err)
	}
	setReady(t, webA, false)
	want = "expected 2 max 1 unavailable 1 allowed 0"
	waitStatus(t, ns, "web", want, func(b *v1alpha1.MachineDisruptionBudget) bool { return counts(b) == want })
}

func controlledBy(t *testing.T, o, owner client.Object, kind string) {
	t.Helper()
	o.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: kind, Name: owner.GetName(), UID: owner.GetUID(),
		Controller: ptr.To(true),
	}})
}
