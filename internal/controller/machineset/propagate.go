package machineset

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
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
	// The ledger found which Machines lack something, each once per
	// event (ledger.go): deleting ones and those moving out are not
	// among them. A Machine moving out gets its new set's template when
	// it moves; a write computed from an older read could put this set's
	// labels back on a Machine that has just moved.
	for _, m := range s.ledger.named(s.ledger.stale) {
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
