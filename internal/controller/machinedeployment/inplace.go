package machinedeployment

import (
	"context"
	"maps"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// syncSets keeps each owned set's metadata and in-place template fields in
// line with the deployment: the labels that tie it to the deployment, the
// template's labels, annotations, nodeTemplate and lifecycle (the
// MachineSet controller pushes those on to the Machines, so they change
// without replacing a Machine), the settings copied from the deployment,
// the new set's revision, the OnDelete superseded-at mark and the
// autoscaler's capacity annotations. A paused deployment gets only the
// bookkeeping: pausing holds every template change.
func (r *Reconciler) syncSets(ctx context.Context, s *scope) (reconcile.Result, error) {
	if s.deleting {
		return reconcile.Result{}, nil
	}
	md := s.md
	for _, ms := range s.sets {
		if !ms.DeletionTimestamp.IsZero() {
			continue
		}
		capacity, manageCapacity, err := r.capacityFor(ctx, s, &ms.Spec.Template)
		if err != nil {
			return reconcile.Result{}, err
		}
		isNew := ms == s.newSet
		_, err = s.patchSet(ctx, ms, func(ms *v1alpha1.MachineSet) {
			if ms.Labels == nil {
				ms.Labels = map[string]string{}
			}
			ms.Labels[v1alpha1.MachineDeploymentNameLabel] = md.Name
			ms.Labels[v1alpha1.AutoscalerDeploymentNameLabel] = md.Name
			if !md.Spec.Paused {
				// Labels are only added: others' (the safety controller's
				// frozen label) stay.
				maps.Copy(ms.Labels, md.Spec.Template.Metadata.Labels)
				syncTemplate(md, ms)
			}
			// Not template changes: they apply while paused too.
			ms.Spec.AutoPreserveFailedMax = autoPreserveLimit(s, isNew)
			ms.Spec.FailureDomains = s.placementFor(isNew)
			if isNew {
				setRevision(&ms.Annotations, s.newRevision)
				delete(ms.Annotations, v1alpha1.SupersededAtAnnotation)
			} else if md.Spec.Strategy.Type == v1alpha1.OnDeleteStrategy && !md.Spec.Paused {
				if _, ok := ms.Annotations[v1alpha1.SupersededAtAnnotation]; !ok {
					if ms.Annotations == nil {
						ms.Annotations = map[string]string{}
					}
					ms.Annotations[v1alpha1.SupersededAtAnnotation] = s.now.UTC().Format(time.RFC3339)
				}
			}
			if manageCapacity {
				applyCapacity(&ms.Annotations, capacity)
			}
		})
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// syncTemplate copies the deployment's in-place template fields and
// settings into the set. The set keeps its own template hash label.
func syncTemplate(md *v1alpha1.MachineDeployment, ms *v1alpha1.MachineSet) {
	t := &ms.Spec.Template
	hash := t.Metadata.Labels[v1alpha1.TemplateHashLabel]
	if hash == "" {
		hash = ms.Labels[v1alpha1.TemplateHashLabel]
	}
	t.Metadata.Labels = templateLabels(md, hash)
	t.Metadata.Annotations = maps.Clone(md.Spec.Template.Metadata.Annotations)
	t.Spec.NodeTemplate = *md.Spec.Template.Spec.NodeTemplate.DeepCopy()
	t.Spec.Lifecycle = *md.Spec.Template.Spec.Lifecycle.DeepCopy()
	ms.Spec.MinReadySeconds = md.Spec.MinReadySeconds
	ms.Spec.MaxConcurrentReplacements = md.Spec.MaxConcurrentReplacements
	ms.Spec.ClusterName = md.Spec.ClusterName
}

// templateLabels are the labels of a set's Machines: the deployment
// template's, the set's template hash (so the set's selector finds only its
// own Machines) and the deployment's name (so the machine controller finds
// the deployment's replacement limit, and the autoscaler the node group).
func templateLabels(md *v1alpha1.MachineDeployment, hash string) map[string]string {
	l := maps.Clone(md.Spec.Template.Metadata.Labels)
	if l == nil {
		l = map[string]string{}
	}
	if hash != "" {
		l[v1alpha1.TemplateHashLabel] = hash
	}
	l[v1alpha1.MachineDeploymentNameLabel] = md.Name
	l[v1alpha1.AutoscalerDeploymentNameLabel] = md.Name
	return l
}
