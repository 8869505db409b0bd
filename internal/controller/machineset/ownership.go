package machineset

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/patch"
)

// ownerRef makes ms the controller of a Machine; BlockOwnerDeletion lets a
// foreground deletion of the MachineSet wait for its Machines.
func ownerRef(ms *v1alpha1.MachineSet) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet",
		Name: ms.Name, UID: ms.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// adopt makes ms the controller of an orphan Machine matching its selector,
// only if the Machine did not change since it was read (the patch helper
// locks an owner-reference change): two sets must not both adopt it.
func (r *Reconciler) adopt(ctx context.Context, s *scope, m *v1alpha1.Machine) error {
	h := patch.New(r.Client, m)
	m.OwnerReferences = append(m.OwnerReferences, ownerRef(s.ms))
	if err := h.PatchObject(ctx, m); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.log.Info("adopted machine", "machine", m.Name)
	r.event(s.ms, "Normal", "MachineAdopted", "adopted Machine "+m.Name+", which matches the selector")
	return nil
}

// release gives up an owned Machine that no longer matches the selector.
func (r *Reconciler) release(ctx context.Context, s *scope, m *v1alpha1.Machine) error {
	h := patch.New(r.Client, m)
	var kept []metav1.OwnerReference
	for _, ref := range m.OwnerReferences {
		if ref.UID != s.ms.UID {
			kept = append(kept, ref)
		}
	}
	m.OwnerReferences = kept
	if err := h.PatchObject(ctx, m); err != nil {
		return client.IgnoreNotFound(err)
	}
	s.log.Info("released machine", "machine", m.Name)
	r.event(s.ms, "Normal", "MachineReleased", "released Machine "+m.Name+", which no longer matches the selector")
	return nil
}

func nowPtr(t time.Time) *metav1.Time { return &metav1.Time{Time: t} }
