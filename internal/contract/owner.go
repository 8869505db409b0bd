package contract

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The provider's side of the contract, shared by Millwright's reference
// providers: finding the owner Machine and honouring the pause.

// OwnerMachine returns obj's owner reference to a Machine (the controller
// reference the machine controller sets, else any), and that Machine when
// it is in c; the Machine is nil when there is no owner, or it is not (yet)
// readable, or it is another Machine of the same name.
func OwnerMachine(ctx context.Context, c client.Reader, obj client.Object) (*metav1.OwnerReference, *v1alpha1.Machine, error) {
	owner := machineOwner(obj.GetOwnerReferences())
	if owner == nil {
		return nil, nil, nil
	}
	m := &v1alpha1.Machine{}
	err := c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: owner.Name}, m)
	switch {
	case apierrors.IsNotFound(err):
		return owner, nil, nil
	case err != nil:
		return owner, nil, err
	case m.UID != owner.UID:
		return owner, nil, nil
	}
	return owner, m, nil
}

func machineOwner(refs []metav1.OwnerReference) *metav1.OwnerReference {
	var found *metav1.OwnerReference
	for i := range refs {
		gv, err := schema.ParseGroupVersion(refs[i].APIVersion)
		if err != nil || gv.Group != v1alpha1.GroupName || refs[i].Kind != "Machine" {
			continue
		}
		if refs[i].Controller != nil && *refs[i].Controller {
			return &refs[i]
		}
		if found == nil {
			found = &refs[i]
		}
	}
	return found
}

// Paused reports whether obj or its owner Machine m (nil when unknown)
// carries the paused annotation (docs/contract-providers.md, "Pausing").
func Paused(obj client.Object, m *v1alpha1.Machine) bool {
	if _, ok := obj.GetAnnotations()[v1alpha1.PausedAnnotation]; ok {
		return true
	}
	if m != nil {
		if _, ok := m.Annotations[v1alpha1.PausedAnnotation]; ok {
			return true
		}
	}
	return false
}
