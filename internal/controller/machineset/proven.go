package machineset

import (
	"encoding/json"
	"hash/fnv"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Slow start protects against an unproven template: until one of a
// set's Machines made from its current template reaches Running, the set
// has one Machine in creation at a time, so a template that cannot make
// a working Machine costs one Machine (then the replacement backoff).
// Once one has run, the template is proven and the set creates up to
// its whole creation window at once. The proof is kept in the set's
// status (status.provenTemplate, condition TemplateProven): it survives
// a restart of the manager and a scale to zero, so a rollback to an old
// set's revision starts at full speed (docs/architecture.md, MachineSet).

// templateHash identifies what makes a set's VMs: the template's spec
// without nodeTemplate and lifecycle, which are pushed to existing
// Machines in place (see propagate) and change no VM.
func templateHash(ms *v1alpha1.MachineSet) string {
	spec := ms.Spec.Template.Spec.DeepCopy()
	spec.NodeTemplate = v1alpha1.NodeTemplateSpec{}
	spec.Lifecycle = v1alpha1.MachineLifecycle{}
	data, err := json.Marshal(spec)
	if err != nil {
		return "" // never proven: slow start, the safe side
	}
	h := fnv.New64a()
	_, _ = h.Write(data)
	return strconv.FormatUint(h.Sum64(), 36)
}

// proven reports whether the set's current template is proven: recorded
// so, or one of its Machines made from it has run. A Machine made before
// Machines carried their template's hash (no set-template annotation)
// counts as made from the current template, so that an upgrade does not
// send every existing set back to slow start; a set's template changes
// only in place under a MachineDeployment (a new template is a new set).
func proven(s *scope) bool {
	if s.template == "" {
		return false
	}
	if s.ms.Status.ProvenTemplate == s.template {
		return true
	}
	for _, m := range s.owned {
		if made, ok := m.Annotations[v1alpha1.SetTemplateAnnotation]; (!ok || made == s.template) && everRunning(m) {
			return true
		}
	}
	return false
}

// creationWindow is how many of the set's Machines may be in creation at
// once: limit for a proven template, else 1.
func creationWindow(s *scope, limit int) int {
	if s.proven {
		return limit
	}
	return 1
}

// recordProven writes the proof into the status (see above).
func (r *Reconciler) recordProven(s *scope) {
	if s.proven {
		s.ms.Status.ProvenTemplate = s.template
		r.setCondition(s, v1alpha1.TemplateProvenCondition, metav1.ConditionTrue, "MachineRunning",
			"a Machine made from the current template has reached Running: Machines are created without slow start")
		return
	}
	r.setCondition(s, v1alpha1.TemplateProvenCondition, metav1.ConditionFalse, "NoMachineRunYet",
		"no Machine made from the current template has reached Running yet: one Machine is created at a time until one does")
}
