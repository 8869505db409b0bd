package machine

import (
	"context"
	"fmt"
	"maps"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
)

// moveToTarget moves a Machine whose update succeeded into its target
// set. The Succeeded status is written first — the API lets spec.class
// and spec.version change only to what a Succeeded update recorded —
// then ONE patch of the Machine: class, version, node template and
// lifecycle of the target template, its labels (the old set's template
// labels give way to the target's, set-name included), the controller
// owner reference to the target set, and the annotation removed. A
// MachineSet counting the Machine sees it either in its old place or in
// its new one, never in both or neither (docs/in-place-updates.md). The
// Node is uncordoned (only this controller's cordon) and its update keys
// removed afterwards, also by any later reconcile if that write fails.
func (r *Reconciler) moveToTarget(ctx context.Context, s *scope) (reconcile.Result, error) {
	m := s.machine
	if err := s.checkpoint(ctx); err != nil {
		return reconcile.Result{}, err
	}
	u := m.Status.InPlaceUpdate // after the write: a write leaves a copy
	set, err := r.machineSet(ctx, m.Namespace, u.TargetSet)
	if err != nil {
		return reconcile.Result{}, err
	}
	if set == nil {
		r.endInPlace(s, v1alpha1.InPlaceFailed, "the update was applied, but the target MachineSet "+u.TargetSet+
			" no longer exists or is being deleted: the Machine stays in its set")
		return reconcile.Result{}, nil
	}
	tpl := set.Spec.Template
	var oldLabels map[string]string
	if owner := metav1.GetControllerOf(m); owner != nil && owner.Kind == "MachineSet" && owner.Name != set.Name {
		old := &v1alpha1.MachineSet{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: owner.Name}, old); err == nil {
			oldLabels = old.Spec.Template.Metadata.Labels
		}
	}
	labels := maps.Clone(m.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	for k := range oldLabels {
		if _, kept := tpl.Metadata.Labels[k]; !kept {
			delete(labels, k)
		}
	}
	maps.Copy(labels, tpl.Metadata.Labels)
	labels[v1alpha1.MachineSetNameLabel] = set.Name // as the set labels the Machines it makes
	if md := set.Labels[v1alpha1.MachineDeploymentNameLabel]; md != "" {
		labels[v1alpha1.MachineDeploymentNameLabel] = md
	}
	m.Labels = labels
	if u.Class != "" {
		m.Spec.Class = &v1alpha1.MachineClassReference{Name: u.Class}
	}
	m.Spec.Version = u.Version
	m.Spec.NodeTemplate = *tpl.Spec.NodeTemplate.DeepCopy()
	m.Spec.Lifecycle = *tpl.Spec.Lifecycle.DeepCopy()
	m.OwnerReferences = withController(m.OwnerReferences, metav1.OwnerReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet", Name: set.Name, UID: set.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	})
	delete(m.Annotations, v1alpha1.InPlaceTargetAnnotation)
	if err := s.patchObject(ctx); err != nil {
		return reconcile.Result{}, fmt.Errorf("moving the Machine to MachineSet %s: %w", set.Name, err)
	}
	// What this reconcile's earlier steps computed (the infrastructure of
	// the old class) is stale now: the next reconcile starts afresh.
	s.stop = true
	u = m.Status.InPlaceUpdate
	observeInPlaceUpdate(v1alpha1.InPlaceSucceeded, u.FinishedAt.Sub(u.StartedAt.Time)) // once: the annotation is gone
	u.Message = "moved to MachineSet " + set.Name
	s.event(corev1.EventTypeNormal, ReasonInPlaceSucceeded, fmt.Sprintf("updated in place to MachineSet %s (class %s, version %s) in %s",
		set.Name, brief.OrNone(u.Class), brief.OrNone(u.Version), u.FinishedAt.Sub(u.StartedAt.Time).Round(time.Second)))
	return reconcile.Result{}, r.releaseNodeFromUpdate(ctx, s)
}

// withController replaces the controller reference in refs with ref (or
// adds it), keeping the other owners.
func withController(refs []metav1.OwnerReference, ref metav1.OwnerReference) []metav1.OwnerReference {
	out := make([]metav1.OwnerReference, 0, len(refs)+1)
	for _, o := range refs {
		if (o.Controller != nil && *o.Controller) || o.UID == ref.UID {
			continue
		}
		out = append(out, o)
	}
	return append(out, ref)
}
