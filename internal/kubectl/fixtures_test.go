package kubectl_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// The fixtures are objects the tests write as the controllers would, so
// that tables are the same on every run: no controller runs in their
// namespaces.

var bg = context.Background()

// namespace creates ns (names are fixed: golden files show them).
func namespace(t *testing.T, ns string) {
	t.Helper()
	err := controllertest.Env.Client.Create(bg, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := controllertest.Env.Client.Create(bg, obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// setStatus writes obj's status as a controller would.
func setStatus(t *testing.T, obj client.Object) {
	t.Helper()
	if err := controllertest.Env.Client.Status().Update(bg, obj); err != nil {
		t.Fatalf("status of %T %s: %v", obj, obj.GetName(), err)
	}
}

// machine creates a Machine of class in ns with the deployment and set
// labels (when given), then writes status with edit.
func machine(t *testing.T, ns, name, class, deployment, set, providerID string, status func(m *v1alpha1.Machine)) *v1alpha1.Machine {
	t.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: map[string]string{}},
		Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: class}, ProviderID: providerID},
	}
	if deployment != "" {
		m.Labels[v1alpha1.MachineDeploymentNameLabel] = deployment
	}
	if set != "" {
		m.Labels[v1alpha1.MachineSetNameLabel] = set
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet",
			Name: set, UID: types.UID("uid-" + set), Controller: ptrTo(true)}}
	}
	create(t, m)
	if status != nil {
		status(m)
		setStatus(t, m)
	}
	return m
}

// cond is a Machine condition that last changed at.
func cond(typ string, status metav1.ConditionStatus, reason, message string, at time.Time) metav1.Condition {
	return metav1.Condition{Type: typ, Status: status, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(at)}
}

// node creates a Node whose Ready condition is ready.
func node(t *testing.T, name string, ready corev1.ConditionStatus, unschedulable bool) *corev1.Node {
	t.Helper()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: unschedulable}}
	create(t, n)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, Reason: "Test",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now()}}
	setStatus(t, n)
	return n
}

// pod creates a pod bound to nodeName in phase, with labels and an owner kind ("" for none).
func pod(t *testing.T, ns, name, nodeName string, phase corev1.PodPhase, labels map[string]string, ownerKind string) {
	t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec:       corev1.PodSpec{NodeName: nodeName, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
	}
	if ownerKind != "" {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: ownerKind, Name: "owner", UID: "uid-owner", Controller: ptrTo(true)}}
	}
	create(t, p)
	p.Status.Phase = phase
	if phase == corev1.PodRunning {
		// Ready: a budget protects only healthy pods from eviction.
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	setStatus(t, p)
}

func ptrTo[T any](v T) *T { return &v }

// latest is the newest creation time of the Machines of ns: the tables'
// ages are measured from a clock set after it.
func latest(t *testing.T, ns string) time.Time {
	t.Helper()
	list := &v1alpha1.MachineList{}
	if err := controllertest.Env.Client.List(bg, list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var at time.Time
	for _, m := range list.Items {
		if m.CreationTimestamp.After(at) {
			at = m.CreationTimestamp.Time
		}
	}
	return at
}

func objectKey(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }

func inNamespace(ns string) client.InNamespace { return client.InNamespace(ns) }
