package contracttest

import (
	"context"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// InfraMachine: pausing. With the paused annotation on the InfraMachine
// or on its Machine, the Paused condition is True and nothing progresses,
// deletion included; without it, Paused is False and reconciling resumes.
func (s *suite) testPausing(t *testing.T) {
	paused := map[string]string{v1alpha1.PausedAnnotation: "true"}
	w := s.newWorld(t, worldOptions{infraAnnotations: paused})
	w.eventually("to report Paused True", func(u *unstructured.Unstructured) bool {
		return conditionStatus(u, "Paused") == "True"
	})
	w.never("made progress while paused", func(u *unstructured.Unstructured) bool {
		return initialized(u) || providerID(u) != ""
	})
	w.patchInfra(func(u *unstructured.Unstructured) {
		ann := u.GetAnnotations()
		delete(ann, v1alpha1.PausedAnnotation)
		u.SetAnnotations(ann)
	})
	w.eventually("to report Paused False and initialization completed once unpaused", func(u *unstructured.Unstructured) bool {
		return conditionStatus(u, "Paused") == "False" && initialized(u)
	})

	// Paused through the owner Machine: a deletion waits.
	w.patchMachine(func(m *v1alpha1.Machine) { m.Annotations = paused })
	w.eventually("to report Paused True while its Machine is paused", func(u *unstructured.Unstructured) bool {
		return conditionStatus(u, "Paused") == "True"
	})
	if err := s.c.Delete(context.Background(), w.infra); err != nil {
		t.Fatal(err)
	}
	w.never("was deleted while its Machine is paused", func(u *unstructured.Unstructured) bool {
		return conditionStatus(u, "Paused") != "True"
	})
	w.patchMachine(func(m *v1alpha1.Machine) { delete(m.Annotations, v1alpha1.PausedAnnotation) })
	w.gone()
}

// Workflow step 1: without a Machine owner the InfraMachine is not
// reconciled; once owned it is.
func (s *suite) testNoOwner(t *testing.T) {
	w := s.newWorld(t, worldOptions{noOwner: true})
	w.never("made progress without a Machine owner", func(u *unstructured.Unstructured) bool {
		return initialized(u) || providerID(u) != "" || len(u.GetFinalizers()) > 0
	})
	w.setOwner()
	w.ready()
}

// Workflow step 6: no infrastructure before the Machine has
// spec.bootstrap.dataSecretName.
func (s *suite) testWaitsForBootstrapData(t *testing.T) {
	w := s.newWorld(t, worldOptions{noBootstrap: true})
	w.never("made progress before the Machine had bootstrap data", func(u *unstructured.Unstructured) bool {
		return initialized(u) || providerID(u) != ""
	})
	w.patchMachine(func(m *v1alpha1.Machine) { m.Spec.Bootstrap.DataSecretName = &w.secret.Name })
	w.ready()
}

// Deleted resource: deleting the InfraMachine deletes its infrastructure,
// then the InfraMachine goes away (its finalizer, if any, is removed).
func (s *suite) testDeletion(t *testing.T) {
	w := s.newWorld(t, worldOptions{})
	id := providerID(w.ready())
	if err := s.c.Delete(context.Background(), w.infra); err != nil {
		t.Fatal(err)
	}
	w.gone()
	if s.Exists == nil {
		return
	}
	exists, err := s.Exists(context.Background(), id)
	if err != nil {
		t.Fatalf("Exists(%s): %v", id, err)
	}
	if exists {
		t.Fatalf("the InfraMachine is gone but its infrastructure %s still exists", id)
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
