package contracttest

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// world is one InfraMachine with what the Millwright machine controller
// would give it: an owner Machine and a bootstrap data Secret.
type world struct {
	s       *suite
	t       *testing.T
	name    string
	infra   *unstructured.Unstructured
	machine *v1alpha1.Machine
	secret  *corev1.Secret
}

// worldOptions shape a world.
type worldOptions struct {
	variant Variant
	// noOwner leaves the InfraMachine without its Machine owner reference.
	noOwner bool
	// noBootstrap leaves the Machine without spec.bootstrap.dataSecretName.
	noBootstrap bool
	// failureDomain is the Machine's spec.failureDomain.
	failureDomain string
	// infraAnnotations are put on the InfraMachine at creation.
	infraAnnotations map[string]string
}

func (s *suite) createNamespace(t *testing.T) {
	ctx := context.Background()
	if err := s.c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: s.ns}}); err != nil {
		t.Fatalf("creating namespace %s: %v", s.ns, err)
	}
}

// newWorld creates the Secret, the InfraMachine and the Machine, then
// makes the Machine the InfraMachine's controller owner, in the order the
// machine controller does. Everything is deleted when the test ends.
func (s *suite) newWorld(t *testing.T, o worldOptions) *world {
	t.Helper()
	if o.variant == "" {
		o.variant = Valid
	}
	name := fmt.Sprintf("%s-%d", s.prefix, s.seq.Add(1))
	w := &world{s: s, t: t, name: name}

	w.secret = &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name + "-bootstrap"},
		Data:       map[string][]byte{"value": []byte("#!/bin/sh\necho " + name + "\n")},
	}
	s.create(t, w.secret)

	w.infra = s.NewInfraMachine(o.variant)
	if w.infra == nil {
		t.Fatalf("NewInfraMachine(%s) returned nil", o.variant)
	}
	w.infra.SetGroupVersionKind(s.InfraMachine)
	w.infra.SetNamespace(s.ns)
	w.infra.SetName(name)
	if len(o.infraAnnotations) > 0 {
		w.infra.SetAnnotations(o.infraAnnotations)
	}
	s.create(t, w.infra)

	w.machine = &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: name},
		Spec: v1alpha1.MachineSpec{
			InfrastructureRef: &v1alpha1.ContractReference{APIGroup: s.InfraMachine.Group, Kind: s.InfraMachine.Kind, Name: name},
			FailureDomain:     o.failureDomain,
		},
	}
	if !o.noBootstrap {
		w.machine.Spec.Bootstrap.DataSecretName = ptr.To(w.secret.Name)
	}
	s.create(t, w.machine)
	t.Cleanup(w.cleanup)

	if !o.noOwner {
		w.setOwner()
	}
	return w
}

func (s *suite) create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := s.c.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %s %s: %v", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
	}
}

// setOwner makes the Machine the InfraMachine's controller owner.
func (w *world) setOwner() {
	w.t.Helper()
	w.patchInfra(func(u *unstructured.Unstructured) {
		u.SetOwnerReferences(append(u.GetOwnerReferences(), metav1.OwnerReference{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine", Name: w.machine.Name, UID: w.machine.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
		}))
	})
}

// patchInfra applies mutate to the InfraMachine's metadata or spec with
// a merge patch.
func (w *world) patchInfra(mutate func(*unstructured.Unstructured)) {
	w.t.Helper()
	cur := w.get()
	base := cur.DeepCopy()
	mutate(cur)
	if err := w.s.c.Patch(context.Background(), cur, client.MergeFrom(base)); err != nil {
		w.t.Fatalf("patching %s %s: %v", w.s.InfraMachine.Kind, w.name, err)
	}
}

// patchMachine applies mutate to the owner Machine.
func (w *world) patchMachine(mutate func(*v1alpha1.Machine)) {
	w.t.Helper()
	m := &v1alpha1.Machine{}
	if err := w.s.c.Get(context.Background(), client.ObjectKeyFromObject(w.machine), m); err != nil {
		w.t.Fatal(err)
	}
	base := m.DeepCopy()
	mutate(m)
	if err := w.s.c.Patch(context.Background(), m, client.MergeFrom(base)); err != nil {
		w.t.Fatalf("patching Machine %s: %v", w.name, err)
	}
	w.machine = m
}

// get returns the InfraMachine as the API server has it.
func (w *world) get() *unstructured.Unstructured {
	w.t.Helper()
	u, err := w.tryGet()
	if err != nil {
		w.t.Fatalf("getting %s %s: %v", w.s.InfraMachine.Kind, w.name, err)
	}
	return u
}

func (w *world) tryGet() (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(w.s.InfraMachine)
	return u, w.s.c.Get(context.Background(), client.ObjectKey{Namespace: w.s.ns, Name: w.name}, u)
}

// cleanup unpauses and deletes everything the world made. It does not
// wait: the namespace is thrown away with the API server.
func (w *world) cleanup() {
	ctx := context.Background()
	if u, err := w.tryGet(); err == nil && u.GetAnnotations()[v1alpha1.PausedAnnotation] != "" {
		base := u.DeepCopy()
		ann := u.GetAnnotations()
		delete(ann, v1alpha1.PausedAnnotation)
		u.SetAnnotations(ann)
		_ = w.s.c.Patch(ctx, u, client.MergeFrom(base))
	}
	for _, obj := range []client.Object{w.infra, w.machine, w.secret} {
		if err := w.s.c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			w.t.Logf("cleanup: deleting %s: %v", obj.GetName(), err)
		}
	}
}
