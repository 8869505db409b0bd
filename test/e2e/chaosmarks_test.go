package e2e

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// What another controller writes on a Machine in the chaos run: an
// annotation, a label and a status condition of its own, which
// Millwright must never remove or overwrite.
const (
	foreignKey       = "example.com/chaos"
	foreignValue     = "kept"
	foreignCondition = "ExampleChaosReady"
)

// foreignMarks remembers, for each Machine marked, the resourceVersion
// from which on every version must carry the marks.
type foreignMarks struct {
	mu   sync.Mutex
	from map[string]int64
}

func newForeignMarks() *foreignMarks { return &foreignMarks{from: map[string]int64{}} }

// mark writes the marks on Machine name, as another controller would:
// its metadata with a merge patch, its condition with an update of the
// status it read (retried on conflicts). It returns what went wrong: the
// Machine may be gone, or the API server down for a moment.
func (f *foreignMarks) mark(ns, name string) error {
	ctx := context.Background()
	m := &v1alpha1.Machine{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
		return err
	}
	patch := client.MergeFrom(m.DeepCopy())
	metav1.SetMetaDataAnnotation(&m.ObjectMeta, foreignKey, foreignValue)
	metav1.SetMetaDataLabel(&m.ObjectMeta, foreignKey, foreignValue)
	if err := k8s.Patch(ctx, m, patch); err != nil {
		return err
	}
	for attempt := 0; ; attempt++ {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: foreignCondition, Status: metav1.ConditionTrue,
			Reason: "Chaos", Message: "written by another controller", ObservedGeneration: m.Generation})
		err := k8s.Status().Update(ctx, m)
		if err == nil {
			break
		}
		if attempt == 10 {
			return err
		}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(m), m); err != nil {
			return err
		}
	}
	rv, _ := strconv.ParseInt(m.ResourceVersion, 10, 64)
	f.mu.Lock()
	f.from[name] = rv
	f.mu.Unlock()
	return nil
}

// count is how many Machines were marked.
func (f *foreignMarks) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.from)
}

// verify fails the test for every marked Machine that still exists and
// has lost a mark: the recorder's check sees only the versions it is
// told of after the marking, and a Machine may change no more after it.
func (f *foreignMarks) verify(t testing.TB, ns string) {
	t.Helper()
	f.mu.Lock()
	defer f.mu.Unlock()
	for name := range f.from {
		m := &v1alpha1.Machine{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
			continue // deleted since, as a rollout or a scale-down does
		}
		if v := lostMark(m); v != "" {
			t.Errorf("invariant violated at the end: %s", v)
		}
	}
}

// lostMark says which mark m lacks, or "".
func lostMark(m *v1alpha1.Machine) string {
	if m.Annotations[foreignKey] == foreignValue && m.Labels[foreignKey] == foreignValue &&
		meta.IsStatusConditionTrue(m.Status.Conditions, foreignCondition) {
		return ""
	}
	return fmt.Sprintf("Machine %s lost another controller's annotation, label or condition at rv %s: annotation %q, label %q, conditions %v",
		m.Name, m.ResourceVersion, m.Annotations[foreignKey], m.Labels[foreignKey], m.Status.Conditions)
}

// kept is the invariant: a version of a marked Machine at or after its
// marking carries every mark.
func (f *foreignMarks) kept() check {
	return func(r *recorder) string {
		f.mu.Lock()
		defer f.mu.Unlock()
		for _, m := range r.machinesLocked() {
			from, ok := f.from[m.Name]
			rv, _ := strconv.ParseInt(m.ResourceVersion, 10, 64)
			if !ok || rv < from {
				continue
			}
			if v := lostMark(m); v != "" {
				return v
			}
		}
		return ""
	}
}
