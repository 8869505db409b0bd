package patch_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/patch"
)

// The status lock holds after an unlocked metadata write: another
// controller's condition written after the read (a health check's
// OwnerRemediated) is in the version the annotation patch returns, so a
// status patch locked on that version would pass and revert it with the
// conditions of the read. It is refused instead, and the condition stays.
func TestStatusLockHoldsAfterAnUnlockedMetadataWrite(t *testing.T) {
	m := machine(t)
	h := patch.New(env.Client, m, patch.WithStatusLock())
	they(t, m, func(m *v1alpha1.Machine) {
		meta.SetStatusCondition(&m.Status.Conditions, condition(v1alpha1.OwnerRemediatedCondition))
	}, true)
	m.Annotations = map[string]string{"ours": "1"}
	meta.SetStatusCondition(&m.Status.Conditions, condition("Ours"))
	if err := h.PatchObject(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	err := h.PatchStatus(t.Context(), m)
	got := read(t, m)
	if meta.FindStatusCondition(got.Status.Conditions, v1alpha1.OwnerRemediatedCondition) == nil {
		t.Fatalf("conditions %v: the status patch (err %v) reverted the condition another writer added before the annotation patch", got.Status.Conditions, err)
	}
	if !apierrors.IsConflict(err) {
		t.Fatalf("status patch computed from a read older than another writer's status: %v, want a Conflict", err)
	}
	if got.Annotations["ours"] != "1" {
		t.Fatalf("annotations %v: the annotation patch was lost", got.Annotations)
	}

	// A metadata write that no status write came before leaves the lock
	// on the version it returned: the status goes through.
	m = read(t, m)
	h = patch.New(env.Client, m, patch.WithStatusLock())
	m.Annotations["ours"] = "2"
	meta.SetStatusCondition(&m.Status.Conditions, condition("Ours"))
	if err := h.Patch(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	got = read(t, m)
	if meta.FindStatusCondition(got.Status.Conditions, "Ours") == nil || meta.FindStatusCondition(got.Status.Conditions, v1alpha1.OwnerRemediatedCondition) == nil {
		t.Fatalf("conditions %v, want Ours and OwnerRemediated", got.Status.Conditions)
	}
}
