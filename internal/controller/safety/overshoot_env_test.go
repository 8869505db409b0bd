package safety_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// A MachineSet of a MachineDeployment (replicas 1, maxSurge 1) whose
// Machines reach 1 + 1 + safety-up (2) = 4 is frozen, and so is the
// deployment; at 3 they unfreeze. No MachineSet controller runs, so only
// the test makes and removes Machines, as a runaway controller would.
func TestOvershootFreezesAndUnfreezes(t *testing.T) {
	w := newWorld(t, setup{cfg: testConfig()})
	w.Class("c", controllertest.SimSpec)
	md, ms := w.deploymentAndSet("web", 1)

	for i := range 3 {
		w.ownedMachine(ms, fmt.Sprint("m", i))
	}
	w.staysUnfrozen(ms, 2*time.Second)
	w.ownedMachine(ms, "m3")
	w.expectFrozen(ms, true, 10*time.Second)
	w.expectFrozen(md, true, 10*time.Second)
	w.ExpectEvent("Frozen", ms.Name, md.Name)

	w.DeleteMachine("m3")
	w.expectFrozen(ms, false, 10*time.Second)
	w.expectFrozen(md, false, 10*time.Second)
	w.ExpectEvent("Unfrozen", ms.Name, md.Name)
}

// The unfreeze annotation lifts a freeze while the Machines are still too
// many, holds off a new one, and is dropped once the count is back down.
func TestOvershootUnfreezeAnnotation(t *testing.T) {
	w := newWorld(t, setup{cfg: testConfig()})
	w.Class("c", controllertest.SimSpec)
	_, ms := w.deploymentAndSet("web", 1)
	for i := range 4 {
		w.ownedMachine(ms, fmt.Sprint("m", i))
	}
	w.expectFrozen(ms, true, 10*time.Second)

	w.setAnnotation(ms, v1alpha1.UnfreezeAnnotation, "true")
	w.expectFrozen(ms, false, 10*time.Second)
	w.ownedMachine(ms, "m4") // 5 Machines: still not frozen, by the person's word
	w.staysUnfrozen(ms, 2*time.Second)
	if got := w.get(ms); got.GetAnnotations()[v1alpha1.UnfreezeAnnotation] == "" {
		t.Fatalf("the unfreeze annotation was dropped with 5 Machines: %v", got.GetAnnotations())
	}

	w.DeleteMachine("m4")
	w.DeleteMachine("m3")
	w.Eventually(10*time.Second, "the unfreeze annotation to be dropped", func() (bool, error) {
		return w.get(ms).GetAnnotations()[v1alpha1.UnfreezeAnnotation] == "", nil
	})
	// The check guards again: back at 4, frozen.
	w.ownedMachine(ms, "m5")
	w.expectFrozen(ms, true, 10*time.Second)
}

// deploymentAndSet creates a MachineDeployment of replicas (maxSurge 1)
// and a MachineSet it controls, as the deployment controller would (which
// does not run here).
func (w *world) deploymentAndSet(name string, replicas int32) (*v1alpha1.MachineDeployment, *v1alpha1.MachineSet) {
	w.T.Helper()
	labels := map[string]string{"app": w.Prefix + name}
	template := v1alpha1.MachineTemplateSpec{
		Metadata: v1alpha1.ObjectMeta{Labels: labels},
		Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "c"}},
	}
	surge := intstr.FromInt32(1)
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Prefix + name, Namespace: w.NS},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: v1alpha1.LabelSelector{MatchLabels: labels},
			Template: template,
			Strategy: v1alpha1.MachineDeploymentStrategy{RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{MaxSurge: &surge}},
		},
	}
	w.Create(md)
	ms := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: w.Prefix + name + "-1", Namespace: w.NS,
			Labels:          map[string]string{v1alpha1.MachineDeploymentNameLabel: md.Name},
			OwnerReferences: []metav1.OwnerReference{controllerRef(md, "MachineDeployment")}},
		Spec: v1alpha1.MachineSetSpec{Replicas: replicas, Selector: md.Spec.Selector, Template: template},
	}
	w.Create(ms)
	return md, ms
}

// ownedMachine creates a Machine named Prefix+name controlled by ms.
func (w *world) ownedMachine(ms *v1alpha1.MachineSet, name string) {
	w.T.Helper()
	w.Machine(name, "c", func(m *v1alpha1.Machine) {
		m.Labels = map[string]string{v1alpha1.MachineDeploymentNameLabel: ms.Labels[v1alpha1.MachineDeploymentNameLabel]}
		m.OwnerReferences = []metav1.OwnerReference{controllerRef(ms, "MachineSet")}
	})
}

func controllerRef(owner client.Object, kind string) metav1.OwnerReference {
	return *metav1.NewControllerRef(owner, v1alpha1.GroupVersion.WithKind(kind))
}

// get reads obj again, into a new object of its type.
func (w *world) get(obj client.Object) client.Object {
	w.T.Helper()
	fresh := obj.DeepCopyObject().(client.Object)
	if err := controllertest.Env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), fresh); err != nil {
		w.T.Fatal(err)
	}
	return fresh
}

func (w *world) expectFrozen(obj client.Object, frozen bool, timeout time.Duration) {
	w.T.Helper()
	w.Eventually(timeout, fmt.Sprintf("%s frozen=%v", obj.GetName(), frozen), func() (bool, error) {
		_, ok := w.get(obj).GetLabels()[v1alpha1.FrozenLabel]
		return ok == frozen, nil
	})
}

// staysUnfrozen fails if obj is frozen at any time during d.
func (w *world) staysUnfrozen(obj client.Object, d time.Duration) {
	w.T.Helper()
	w.Consistently(d, obj.GetName()+" not frozen", func() (bool, error) {
		return w.get(obj).GetLabels()[v1alpha1.FrozenLabel] == "", nil
	})
}

func (w *world) setAnnotation(obj client.Object, key, value string) {
	w.T.Helper()
	fresh := w.get(obj)
	patch := client.MergeFrom(fresh.DeepCopyObject().(client.Object))
	a := fresh.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[key] = value
	fresh.SetAnnotations(a)
	if err := controllertest.Env.Client.Patch(context.Background(), fresh, patch); err != nil {
		w.T.Fatal(err)
	}
}

// A preserved Machine is outside the overshoot count (docs/preservation.md):
// a set of replicas 1 + maxSurge 1 + safety-up 2 whose fourth Machine is
// preserved stays unfrozen, and freezes once that Machine counts again.
func TestOvershootDoesNotCountPreservedMachines(t *testing.T) {
	w := newWorld(t, setup{cfg: testConfig()})
	w.Class("c", controllertest.SimSpec)
	_, ms := w.deploymentAndSet("web", 1)
	for i := range 3 {
		w.ownedMachine(ms, fmt.Sprint("m", i))
	}
	w.Machine("kept", "c", func(m *v1alpha1.Machine) {
		m.Labels = map[string]string{v1alpha1.MachineDeploymentNameLabel: ms.Labels[v1alpha1.MachineDeploymentNameLabel]}
		m.OwnerReferences = []metav1.OwnerReference{controllerRef(ms, "MachineSet")}
		m.Annotations = map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveNow}
	})
	w.staysUnfrozen(ms, 2*time.Second)
	w.RemoveAnnotation("kept", v1alpha1.PreserveAnnotation)
	// The check wakes on Machines created or deleted, on a change of the
	// set, and every period: poke the set until its cache shows the
	// Machine no longer preserved, rather than wait a period.
	poke := 0
	w.Eventually(10*time.Second, "the set frozen once the Machine counts", func() (bool, error) {
		if _, ok := w.get(ms).GetLabels()[v1alpha1.FrozenLabel]; ok {
			return true, nil
		}
		poke++
		w.setAnnotation(ms, "example.com/poke", fmt.Sprint(poke))
		return false, nil
	})
}

// A set whose size went down keeps Machines above its new limit until it
// has deleted them (slowly, when a budget grants one deletion at a time):
// that is not a runaway, and it is not frozen. A Machine created then is,
// and freezes it. The period is short here, so the first Machines are
// old by the time the size goes down; but not too short: the new
// Machine's check must come within the period of its creationTimestamp
// (whole seconds), and at 2 s a loaded CI machine missed it.
func TestOvershootLeavesAScaleDownAlone(t *testing.T) {
	cfg := testConfig()
	cfg.OvershootingPeriod = 6 * time.Second
	w := newWorld(t, setup{cfg: cfg})
	w.Class("c", controllertest.SimSpec)
	md, ms := w.deploymentAndSet("web", 4) // limit 4 + 1 + 2 = 7
	for i := range 4 {
		w.ownedMachine(ms, fmt.Sprint("m", i))
	}
	// Under the limit (7) while they age past the period.
	w.staysUnfrozen(ms, cfg.OvershootingPeriod+time.Second)

	w.setReplicas(md, 1) // limit 1 + 1 + 2 = 4, with 4 Machines
	w.setReplicas(ms, 1)
	w.staysUnfrozen(ms, 3*time.Second)
	w.staysUnfrozen(md, time.Second)

	w.ownedMachine(ms, "m4") // created above the limit: a runaway
	w.expectFrozen(ms, true, 10*time.Second)
	w.expectFrozen(md, true, 10*time.Second)
}

// setReplicas sets spec.replicas of a MachineSet or MachineDeployment.
func (w *world) setReplicas(obj client.Object, replicas int32) {
	w.T.Helper()
	fresh := w.get(obj)
	patch := client.MergeFrom(fresh.DeepCopyObject().(client.Object))
	switch o := fresh.(type) {
	case *v1alpha1.MachineSet:
		o.Spec.Replicas = replicas
	case *v1alpha1.MachineDeployment:
		o.Spec.Replicas = replicas
	default:
		w.T.Fatalf("setReplicas: %T", fresh)
	}
	if err := controllertest.Env.Client.Patch(context.Background(), fresh, patch); err != nil {
		w.T.Fatal(err)
	}
}
