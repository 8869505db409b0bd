package patch_test

import (
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/patch"
)

// ownWrite writes m's status as a reconcile that read m would, with own.
func ownWrite(t *testing.T, own *patch.OwnStatus, m *v1alpha1.Machine, phase v1alpha1.MachinePhase) error {
	t.Helper()
	h := patch.New(env.Client, m, patch.WithOwnStatus(own))
	m.Status.Phase = phase
	return h.Patch(t.Context(), m)
}

// A status only this process writes, read as it last wrote it, is written
// whatever else changed since the read but the spec: another writer's
// labels and annotations do not refuse it (the resourceVersion lock did).
func TestOwnStatusGoesThroughOtherWrites(t *testing.T) {
	own := &patch.OwnStatus{}
	m := machine(t)
	if err := ownWrite(t, own, m, v1alpha1.PhasePending); err != nil {
		t.Fatal(err)
	}
	m = read(t, m)
	they(t, m, func(m *v1alpha1.Machine) {
		m.Labels = map[string]string{"theirs": "1"}
		m.Annotations = map[string]string{"theirs": "2"}
	}, false)
	between := read(t, m) // a cache that saw their write, not ours
	if err := ownWrite(t, own, m, v1alpha1.PhaseRunning); err != nil {
		t.Fatalf("status write after their label write: %v", err)
	}
	if !own.Behind(between) {
		t.Fatal("Behind is false for a version between the write's read and the write")
	}
	got := read(t, m)
	if own.Behind(got) {
		t.Fatal("Behind is true for the version written")
	}
	if got.Status.Phase != v1alpha1.PhaseRunning || got.Labels["theirs"] != "1" || got.Annotations["theirs"] != "2" {
		t.Fatalf("phase %q, labels %v, annotations %v", got.Status.Phase, got.Labels, got.Annotations)
	}
	if m.ResourceVersion != got.ResourceVersion || m.Status.Phase != v1alpha1.PhaseRunning {
		t.Fatalf("the object is not what was written: resourceVersion %s (server %s)", m.ResourceVersion, got.ResourceVersion)
	}
	// A member removed is removed.
	m = read(t, m)
	if err := ownWrite(t, own, m, ""); err != nil {
		t.Fatal(err)
	}
	if got := read(t, m).Status.Phase; got != "" {
		t.Fatalf("phase %q after removing it", got)
	}
}

// A spec change since the read refuses the status write: the status was
// computed for the spec read.
func TestOwnStatusRefusedWhenTheSpecChanged(t *testing.T) {
	own := &patch.OwnStatus{}
	m := machine(t)
	if err := ownWrite(t, own, m, v1alpha1.PhasePending); err != nil {
		t.Fatal(err)
	}
	m = read(t, m)
	they(t, m, func(m *v1alpha1.Machine) { m.Spec.FailureDomain = "theirs" }, false)
	if err := ownWrite(t, own, m, v1alpha1.PhaseRunning); !apierrors.IsConflict(err) {
		t.Fatalf("status write after a spec change: %v, want a Conflict", err)
	}
	if got := read(t, m).Status.Phase; got != v1alpha1.PhasePending {
		t.Fatalf("phase %q: the refused status was written", got)
	}
}

// A read behind this process's own last status write (a cache that has
// not seen it) is locked on its resourceVersion: its status would undo
// the newer one. Behind says so for the very version the write was made
// on, not for the version written.
func TestOwnStatusFromAReadBehindOurWriteIsRefused(t *testing.T) {
	own := &patch.OwnStatus{}
	m := machine(t)
	if err := ownWrite(t, own, m, v1alpha1.PhasePending); err != nil {
		t.Fatal(err)
	}
	stale := read(t, m)
	if err := ownWrite(t, own, stale.DeepCopy(), v1alpha1.PhaseRunning); err != nil {
		t.Fatal(err)
	}
	if !own.Behind(stale) {
		t.Fatal("Behind is false for the version the last write was made on")
	}
	if now := read(t, m); own.Behind(now) {
		t.Fatal("Behind is true for the version written")
	}
	if err := ownWrite(t, own, stale, v1alpha1.PhaseFailed); !apierrors.IsConflict(err) {
		t.Fatalf("status write from a read behind our own: %v, want a Conflict", err)
	}
	if got := read(t, m).Status.Phase; got != v1alpha1.PhaseRunning {
		t.Fatalf("phase %q: our newer Running was overwritten", got)
	}
}

// A status someone else wrote is not the one remembered: a write from a
// read of it is locked on the resourceVersion (their label write since
// refuses it), and goes through from a fresh read.
func TestOwnStatusAfterAnotherWriterIsLocked(t *testing.T) {
	own := &patch.OwnStatus{}
	m := machine(t)
	if err := ownWrite(t, own, m, v1alpha1.PhasePending); err != nil {
		t.Fatal(err)
	}
	they(t, m, func(m *v1alpha1.Machine) { m.Status.Phase = v1alpha1.PhaseRunning }, true)
	m = read(t, m)
	they(t, m, func(m *v1alpha1.Machine) { m.Labels = map[string]string{"theirs": "1"} }, false)
	if err := ownWrite(t, own, m, v1alpha1.PhaseFailed); !apierrors.IsConflict(err) {
		t.Fatalf("status write from a read of their status, changed since: %v, want a Conflict", err)
	}
	if err := ownWrite(t, own, read(t, m), v1alpha1.PhaseFailed); err != nil {
		t.Fatal(err)
	}
	if got := read(t, m).Status.Phase; got != v1alpha1.PhaseFailed {
		t.Fatalf("phase %q", got)
	}
}
