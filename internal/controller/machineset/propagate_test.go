package machineset

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// upToDate decides, without a copy, whether propagate has anything to
// write: each field it propagates must be able to make it false.
func TestUpToDate(t *testing.T) {
	tmpl := v1alpha1.MachineTemplateSpec{}
	tmpl.Metadata.Labels = map[string]string{"tier": "a"}
	tmpl.Metadata.Annotations = map[string]string{"note": "x"}
	tmpl.Spec.NodeTemplate.Metadata.Labels = map[string]string{"node": "n"}
	tmpl.Spec.Lifecycle.DrainTimeout = &metav1.Duration{Duration: time.Minute}
	current := func() *v1alpha1.Machine {
		m := &v1alpha1.Machine{}
		m.Labels = map[string]string{"tier": "a", "other": "kept"}
		m.Annotations = map[string]string{"note": "x"}
		m.Spec.NodeTemplate = *tmpl.Spec.NodeTemplate.DeepCopy()
		m.Spec.Lifecycle = *tmpl.Spec.Lifecycle.DeepCopy()
		return m
	}
	if !upToDate(current(), &tmpl) {
		t.Fatal("a Machine with everything the template propagates (and a label of its own) is not up to date")
	}
	for name, change := range map[string]func(*v1alpha1.Machine){
		"label missing":         func(m *v1alpha1.Machine) { delete(m.Labels, "tier") },
		"label value differs":   func(m *v1alpha1.Machine) { m.Labels["tier"] = "b" },
		"annotation missing":    func(m *v1alpha1.Machine) { m.Annotations = nil },
		"node template differs": func(m *v1alpha1.Machine) { m.Spec.NodeTemplate.Metadata.Labels["node"] = "o" },
		"lifecycle differs":     func(m *v1alpha1.Machine) { m.Spec.Lifecycle.DrainTimeout = nil },
	} {
		m := current()
		change(m)
		if upToDate(m, &tmpl) {
			t.Errorf("%s: reported up to date", name)
		}
	}
}
