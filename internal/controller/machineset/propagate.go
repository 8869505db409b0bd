package machineset

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/patch"
)

// propagate pushes the template changes that need no new VM — Machine
// labels and annotations, spec.nodeTemplate and spec.lifecycle — to the
// existing Machines, in place. Labels and annotations the template no
// longer has are left on the Machines: nothing records who set them.
func (r *Reconciler) propagate(ctx context.Context, s *scope) error {
	t := s.ms.Spec.Template
	r.propagated.prune(types.NamespacedName{Namespace: s.ms.Namespace, Name: s.ms.Name}, s.owned)
	for _, m := range s.owned {
		if !m.DeletionTimestamp.IsZero() || s.movingOut[m.Name] {
			// A Machine moving out gets its new set's template when it
			// moves; a write computed from an older read could put this
			// set's labels back on a Machine that has just moved.
			continue
		}
		if r.propagated.upToDate(m, s.ms) {
			// The usual case, checked without a copy: a reconcile of a
			// large set would otherwise copy every Machine it owns; and
			// remembered, so a Machine that has not changed since is not
			// compared again (propagated.go).
			continue
		}
		updated := m.DeepCopy()
		updated.Labels = withAll(updated.Labels, t.Metadata.Labels)
		updated.Annotations = withAll(updated.Annotations, t.Metadata.Annotations)
		updated.Spec.NodeTemplate = *t.Spec.NodeTemplate.DeepCopy()
		updated.Spec.Lifecycle = *t.Spec.Lifecycle.DeepCopy()
		// Computed from m, the Machine as read; New copies it, m being the
		// cache's own object.
		if err := patch.New(r.Client, m).PatchObject(ctx, updated); err != nil {
			return client.IgnoreNotFound(err)
		}
		s.log.V(1).Info("propagated template to machine", "machine", m.Name)
	}
	return nil
}

// upToDate reports whether m already has everything propagate would
// write from t.
func upToDate(m *v1alpha1.Machine, t *v1alpha1.MachineTemplateSpec) bool {
	return hasAll(m.Labels, t.Metadata.Labels) &&
		hasAll(m.Annotations, t.Metadata.Annotations) &&
		equality.Semantic.DeepEqual(m.Spec.NodeTemplate, t.Spec.NodeTemplate) &&
		equality.Semantic.DeepEqual(m.Spec.Lifecycle, t.Spec.Lifecycle)
}

// hasAll reports whether have holds every key of want with want's value.
func hasAll(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

// withAll returns have with every key of want set to want's value.
func withAll(have, want map[string]string) map[string]string {
	if len(want) == 0 {
		return have
	}
	out := make(map[string]string, len(have)+len(want))
	for k, v := range have {
		out[k] = v
	}
	for k, v := range want {
		out[k] = v
	}
	return out
}
