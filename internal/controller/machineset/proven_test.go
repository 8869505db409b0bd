package machineset

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func provenSet(class string) *v1alpha1.MachineSet {
	ms := &v1alpha1.MachineSet{}
	ms.Spec.Template.Spec.Class = &v1alpha1.MachineClassReference{Name: class}
	return ms
}

func TestTemplateHashIgnoresOnlyInPlaceFields(t *testing.T) {
	a := provenSet("small")
	b := provenSet("small")
	b.Spec.Template.Spec.Lifecycle.CreationTimeout = &metav1.Duration{Duration: time.Minute}
	b.Spec.Template.Spec.NodeTemplate.Metadata.Labels = map[string]string{"x": "y"}
	b.Spec.Template.Metadata.Labels = map[string]string{"x": "y"}
	if templateHash(a) != templateHash(b) {
		t.Error("a lifecycle, nodeTemplate or label change made a new template: it changes no VM")
	}
	if templateHash(a) == templateHash(provenSet("large")) {
		t.Error("another class is the same template")
	}
}

// Only a Machine made from the current template proves it, or the proof
// recorded for that same template.
func TestProven(t *testing.T) {
	current, old := templateHash(provenSet("small")), templateHash(provenSet("large"))
	running := func(template string) *v1alpha1.Machine {
		return mach("r", v1alpha1.PhaseRunning, 0, map[string]string{v1alpha1.SetTemplateAnnotation: template}, true)
	}
	provisioned := mach("p", v1alpha1.PhaseProvisioned, 0, map[string]string{v1alpha1.SetTemplateAnnotation: current}, false)
	for _, tc := range []struct {
		name     string
		recorded string
		owned    []*v1alpha1.Machine
		want     bool
	}{
		{"nothing ran", "", []*v1alpha1.Machine{provisioned}, false},
		{"a Machine of the current template runs", "", []*v1alpha1.Machine{provisioned, running(current)}, true},
		{"only a Machine of an older template runs", "", []*v1alpha1.Machine{running(old)}, false},
		{"a Machine with an empty annotation runs", "", []*v1alpha1.Machine{running("")}, false},
		{"a Machine made before the annotation existed runs (an upgrade)", "", []*v1alpha1.Machine{mach("legacy", v1alpha1.PhaseRunning, 0, nil, true)}, true},
		{"recorded for the current template, no Machine left", current, nil, true},
		{"recorded for an older template", old, []*v1alpha1.Machine{provisioned}, false},
	} {
		s := &scope{ms: provenSet("small"), template: current, owned: map[string]*v1alpha1.Machine{}}
		s.ms.Status.ProvenTemplate = tc.recorded
		for i, m := range tc.owned {
			s.owned[string(rune('a'+i))] = m
		}
		if got := proven(s); got != tc.want {
			t.Errorf("%s: proven = %v; want %v", tc.name, got, tc.want)
		}
		s.proven = tc.want
		if w, want := creationWindow(s, 256), map[bool]int{true: 256, false: 1}[tc.want]; w != want {
			t.Errorf("%s: window %d; want %d", tc.name, w, want)
		}
	}
}
