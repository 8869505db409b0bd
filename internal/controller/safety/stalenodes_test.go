package safety_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// A Node no Machine owns is annotated not-managed once older than the
// creation timeout, reported by an Event and never deleted; a Machine's
// own Node is left alone; the annotation goes when a Machine claims the Node.
func TestStaleNodeAnnotatedNotDeleted(t *testing.T) {
	cfg := testConfig()
	cfg.StaleNodeAfter = 2 * time.Second
	w := newWorld(t, setup{cfg: cfg})
	w.Class("c", controllertest.SimSpec)
	w.Machine("m", "c", nil)
	m := w.WaitPhase("m", v1alpha1.PhaseRunning, 30*time.Second)

	stray := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: w.Prefix + "stray"},
		Spec: corev1.NodeSpec{ProviderID: "sim://local/local-a/vm-nobody"}}
	w.Create(stray)
	t.Cleanup(func() { _ = controllertest.Env.Client.Delete(context.Background(), stray) })

	w.Eventually(15*time.Second, "the stray Node to be annotated", func() (bool, error) {
		n, err := w.Node(stray.Name)
		return err == nil && n.Annotations[v1alpha1.NodeNotManagedAnnotation] == "true", err
	})
	w.Eventually(10*time.Second, "a NodeNotManaged Event", func() (bool, error) {
		// Events about cluster-scoped objects live in namespace default.
		list := &eventsv1.EventList{}
		err := controllertest.Env.Client.List(context.Background(), list, client.InNamespace(metav1.NamespaceDefault))
		for _, e := range list.Items {
			if e.Regarding.Name == stray.Name && e.Reason == "NodeNotManaged" {
				return true, nil
			}
		}
		return false, err
	})
	// Well past the threshold: the stray Node stays, the Machine's own Node is not annotated.
	w.Consistently(3*time.Second, "the stray Node kept and the Machine's Node unannotated", func() (bool, error) {
		if _, err := w.Node(stray.Name); err != nil {
			return false, err
		}
		own, err := w.Node(m.Status.NodeRef.Name)
		if err != nil {
			return false, err
		}
		_, annotated := own.Annotations[v1alpha1.NodeNotManagedAnnotation]
		return !annotated, nil
	})

	// A Machine claims the stray Node (its back-reference names m).
	n, _ := w.Node(stray.Name)
	patch := client.MergeFrom(n.DeepCopy())
	n.Annotations[v1alpha1.NodeMachineAnnotation] = m.Name
	n.Annotations[v1alpha1.NodeClusterNamespaceAnnotation] = w.NS
	if err := controllertest.Env.Client.Patch(context.Background(), n, patch); err != nil {
		t.Fatal(err)
	}
	w.Eventually(10*time.Second, "the not-managed annotation to go", func() (bool, error) {
		n, err := w.Node(stray.Name)
		_, ok := n.Annotations[v1alpha1.NodeNotManagedAnnotation]
		return err == nil && !ok, err
	})
}
