package patch_test

import (
	"context"
	"maps"
	"os"
	"slices"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/patch"
	"github.com/millwright-dev/millwright/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) error { env = e; return nil }))
}

// counted is a client of the test's control plane that counts the patches
// it sends.
type counted struct {
	client.Client
	patches, statusPatches atomic.Int32
}

func newCounted(t *testing.T) *counted {
	t.Helper()
	inner, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	c := &counted{}
	c.Client = interceptor.NewClient(inner, interceptor.Funcs{
		Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			c.patches.Add(1)
			return cl.Patch(ctx, obj, p, opts...)
		},
		SubResourcePatch: func(ctx context.Context, cl client.Client, sub string, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
			c.statusPatches.Add(1)
			return cl.SubResource(sub).Patch(ctx, obj, p, opts...)
		},
	})
	return c
}

// machine creates a Machine and returns it as read.
func machine(t *testing.T) *v1alpha1.Machine {
	t.Helper()
	m := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "patch-" + rand.String(6), Namespace: "default"},
		Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "c"}},
	}
	if err := env.Client.Create(context.Background(), m); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		got := read(t, m)
		got.Finalizers = nil
		_ = env.Client.Update(context.Background(), got)
		_ = client.IgnoreNotFound(env.Client.Delete(context.Background(), got))
	})
	return read(t, m)
}

// read returns the Machine as the server has it.
func read(t *testing.T, m *v1alpha1.Machine) *v1alpha1.Machine {
	t.Helper()
	got := &v1alpha1.Machine{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(m), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// they change the Machine on the server, after our read: another writer.
func they(t *testing.T, m *v1alpha1.Machine, change func(*v1alpha1.Machine), status bool) {
	t.Helper()
	now := read(t, m)
	change(now)
	var err error
	if status {
		err = env.Client.Status().Update(context.Background(), now)
	} else {
		err = env.Client.Update(context.Background(), now)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func condition(t string) metav1.Condition {
	return metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: "Test", LastTransitionTime: metav1.Now()}
}

func TestNothingSentWhenNothingChanged(t *testing.T) {
	c := newCounted(t)
	m := machine(t)
	h := patch.New(c, m, patch.WithStatusLock())
	if err := h.Patch(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	if n, s := c.patches.Load(), c.statusPatches.Load(); n+s != 0 {
		t.Fatalf("sent %d patches and %d status patches for no change", n, s)
	}
	// One status change: one status patch, and the snapshot is then
	// current, so patching again sends nothing.
	m.Status.Phase = v1alpha1.PhasePending
	for range 2 {
		if err := h.Patch(t.Context(), m); err != nil {
			t.Fatal(err)
		}
	}
	if n, s := c.patches.Load(), c.statusPatches.Load(); n != 0 || s != 1 {
		t.Fatalf("sent %d patches and %d status patches for one status change, want 0 and 1", n, s)
	}
	if got := read(t, m).Status.Phase; got != v1alpha1.PhasePending {
		t.Fatalf("phase %q, want Pending", got)
	}
}

// A finalizer or owner reference change made from a stale read is refused,
// and leaves the other writer's.
func TestStaleFinalizerAndOwnerWritesAreRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		theirs func(*v1alpha1.Machine)
		ours   func(*v1alpha1.Machine)
		kept   func(*v1alpha1.Machine) bool
	}{{
		name:   "finalizer",
		theirs: func(m *v1alpha1.Machine) { m.Finalizers = append(m.Finalizers, "example.com/theirs") },
		ours:   func(m *v1alpha1.Machine) { m.Finalizers = append(m.Finalizers, "example.com/ours") },
		kept:   func(m *v1alpha1.Machine) bool { return slices.Contains(m.Finalizers, "example.com/theirs") },
	}, {
		name: "owner reference",
		theirs: func(m *v1alpha1.Machine) {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "theirs", UID: "theirs"})
		},
		ours: func(m *v1alpha1.Machine) {
			m.OwnerReferences = append(m.OwnerReferences, metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "ours", UID: "ours"})
		},
		kept: func(m *v1alpha1.Machine) bool {
			return slices.ContainsFunc(m.OwnerReferences, func(r metav1.OwnerReference) bool { return r.Name == "theirs" })
		},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			m := machine(t)
			h := patch.New(env.Client, m)
			they(t, m, tc.theirs, false)
			tc.ours(m)
			if err := h.Patch(t.Context(), m); !apierrors.IsConflict(err) {
				t.Fatalf("patch from a stale read: %v, want a Conflict", err)
			}
			if !tc.kept(read(t, m)) {
				t.Fatalf("their %s was dropped", tc.name)
			}
			// From a fresh read, ours is added beside theirs.
			m = read(t, m)
			h = patch.New(env.Client, m)
			tc.ours(m)
			if err := h.Patch(t.Context(), m); err != nil {
				t.Fatal(err)
			}
			if !tc.kept(read(t, m)) {
				t.Fatalf("their %s was dropped", tc.name)
			}
		})
	}
}

// Labels and annotations merge key by key: a change beside another
// writer's needs no lock and keeps theirs.
func TestAnnotationsMergeWithoutLock(t *testing.T) {
	m := machine(t)
	h := patch.New(env.Client, m, patch.WithStatusLock())
	they(t, m, func(m *v1alpha1.Machine) { m.Annotations = map[string]string{"theirs": "1"} }, false)
	m.Annotations = map[string]string{"ours": "1"}
	if err := h.Patch(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	if got := read(t, m).Annotations; got["theirs"] != "1" || got["ours"] != "1" {
		t.Fatalf("annotations %v, want both", got)
	}
}

// With the status lock, a status computed from a stale read is refused.
func TestStaleStatusIsRefusedWhereLocked(t *testing.T) {
	m := machine(t)
	h := patch.New(env.Client, m, patch.WithStatusLock())
	they(t, m, func(m *v1alpha1.Machine) { m.Status.Phase = v1alpha1.PhaseRunning }, true)
	m.Status.Phase = v1alpha1.PhasePending
	if err := h.Patch(t.Context(), m); !apierrors.IsConflict(err) {
		t.Fatalf("stale status patch: %v, want a Conflict", err)
	}
	if got := read(t, m).Status.Phase; got != v1alpha1.PhaseRunning {
		t.Fatalf("phase %q: their Running was overwritten", got)
	}
}

// Without the lock, a patch of the owned conditions keeps another
// controller's condition written since the read.
func TestOwnedConditionsKeepAnotherControllersConditions(t *testing.T) {
	m := machine(t)
	h := patch.New(env.Client, m, patch.WithOwnedConditions("Ours"))
	they(t, m, func(m *v1alpha1.Machine) { meta.SetStatusCondition(&m.Status.Conditions, condition("Theirs")) }, true)
	meta.SetStatusCondition(&m.Status.Conditions, condition("Ours"))
	if err := h.Patch(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	got := read(t, m).Status.Conditions
	if meta.FindStatusCondition(got, "Theirs") == nil || meta.FindStatusCondition(got, "Ours") == nil {
		t.Fatalf("conditions %v, want Theirs and Ours", got)
	}
	// Removing ours leaves theirs.
	m = read(t, m)
	h = patch.New(env.Client, m, patch.WithOwnedConditions("Ours"))
	meta.RemoveStatusCondition(&m.Status.Conditions, "Ours")
	if err := h.Patch(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	got = read(t, m).Status.Conditions
	if meta.FindStatusCondition(got, "Theirs") == nil || meta.FindStatusCondition(got, "Ours") != nil {
		t.Fatalf("conditions %v, want Theirs alone", got)
	}
}

// A metadata change and a status change are two patches; the status the
// caller computed survives the first.
func TestObjectThenStatus(t *testing.T) {
	c := newCounted(t)
	m := machine(t)
	h := patch.New(c, m, patch.WithStatusLock())
	m.Spec.ProviderID = "sim://x"
	m.Status.Phase = v1alpha1.PhasePending
	if err := h.PatchObject(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	if m.Status.Phase != v1alpha1.PhasePending {
		t.Fatalf("PatchObject dropped the unwritten status: phase %q", m.Status.Phase)
	}
	if err := h.Patch(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	got := read(t, m)
	if got.Spec.ProviderID != "sim://x" || got.Status.Phase != v1alpha1.PhasePending {
		t.Fatalf("got providerID %q phase %q", got.Spec.ProviderID, got.Status.Phase)
	}
	if n, s := c.patches.Load(), c.statusPatches.Load(); n != 1 || s != 1 {
		t.Fatalf("sent %d patches and %d status patches, want 1 and 1", n, s)
	}
}

// PatchObjectLocked refuses a change decided from a read older than the
// object's spec: another writer changed the spec (its generation) since.
func TestLockedObjectPatchRefusesASpecChangedSinceRead(t *testing.T) {
	m := machine(t)
	h := patch.New(env.Client, m)
	they(t, m, func(m *v1alpha1.Machine) { m.Spec.FailureDomain = "theirs" }, false)
	m.Spec.ProviderID = "sim://ours"
	if err := h.PatchObjectLocked(t.Context(), m); !apierrors.IsConflict(err) {
		t.Fatalf("locked patch from a read older than the spec: %v, want a Conflict", err)
	}
	if got := read(t, m); got.Spec.ProviderID != "" || got.Spec.FailureDomain != "theirs" {
		t.Fatalf("providerID %q, failureDomain %q: the refused change was written", got.Spec.ProviderID, got.Spec.FailureDomain)
	}
}

// A status write and another writer's labels since the read do not refuse
// a locked patch (the resourceVersion lock did): they do not change what
// it was decided from. Both stay; the patch's spec and annotations are
// written.
func TestLockedObjectPatchGoesThroughStatusWrites(t *testing.T) {
	m := machine(t)
	m.Annotations = map[string]string{"ours/replicas": "1", "ours/gone": "x"}
	if err := env.Client.Update(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	m = read(t, m)
	h := patch.New(env.Client, m)
	they(t, m, func(m *v1alpha1.Machine) { m.Status.Phase = v1alpha1.PhaseRunning }, true)
	they(t, m, func(m *v1alpha1.Machine) { m.Labels = map[string]string{"theirs": "1"} }, false)
	m.Spec.FailureDomain = "ours"
	m.Annotations["ours/replicas"] = "2"
	delete(m.Annotations, "ours/gone")
	m.Annotations["ours/new-key"] = "3"
	if err := h.PatchObjectLocked(t.Context(), m); err != nil {
		t.Fatalf("locked patch after their status and label writes: %v", err)
	}
	got := read(t, m)
	if got.Spec.FailureDomain != "ours" || got.Status.Phase != v1alpha1.PhaseRunning || got.Labels["theirs"] != "1" {
		t.Fatalf("failureDomain %q, phase %q, labels %v", got.Spec.FailureDomain, got.Status.Phase, got.Labels)
	}
	want := map[string]string{"ours/replicas": "2", "ours/new-key": "3"}
	if !maps.Equal(got.Annotations, want) {
		t.Fatalf("annotations %v, want %v", got.Annotations, want)
	}
	if m.ResourceVersion != got.ResourceVersion || m.Status.Phase != "" {
		t.Fatalf("the object is not what was written: resourceVersion %s (server %s), status kept as read %q",
			m.ResourceVersion, got.ResourceVersion, m.Status.Phase)
	}
}

// A locked patch is refused when another writer changed an annotation it
// changes (or its labels, finalizers, owners), as a resourceVersion lock
// would.
func TestLockedObjectPatchRefusesAnAnnotationChangedSinceRead(t *testing.T) {
	m := machine(t)
	m.Annotations = map[string]string{"other": "x"}
	if err := env.Client.Update(t.Context(), m); err != nil {
		t.Fatal(err)
	}
	m = read(t, m)
	h := patch.New(env.Client, m)
	they(t, m, func(m *v1alpha1.Machine) { m.Annotations["shared"] = "theirs" }, false)
	m.Annotations["shared"] = "ours"
	if err := h.PatchObjectLocked(t.Context(), m); !apierrors.IsConflict(err) {
		t.Fatalf("locked patch of an annotation they changed: %v, want a Conflict", err)
	}
	if got := read(t, m).Annotations["shared"]; got != "theirs" {
		t.Fatalf("annotation %q: the refused change was written", got)
	}
}

// A Node has no generation: a locked patch of its labels and taints is
// refused when its taints changed since the read (a merge patch replaces
// the list whole, and would drop theirs), not when its status did (a
// kubelet's heartbeats, many times a minute).
func TestLockedNodePatchLocksTheFieldsItChanges(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "patch-" + rand.String(6), Labels: map[string]string{"a": "1"}},
		Spec: corev1.NodeSpec{Taints: []corev1.Taint{{Key: "uninitialized", Effect: corev1.TaintEffectNoSchedule}}}}
	if err := env.Client.Create(t.Context(), node); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), node) })
	readNode := func() *corev1.Node {
		got := &corev1.Node{}
		if err := env.Client.Get(t.Context(), client.ObjectKeyFromObject(node), got); err != nil {
			t.Fatal(err)
		}
		return got
	}

	ours := readNode()
	h := patch.New(env.Client, ours)
	theirs := readNode()
	theirs.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
	if err := env.Client.Status().Update(t.Context(), theirs); err != nil {
		t.Fatal(err)
	}
	ours.Labels["b"] = "2"
	ours.Spec.Taints = nil
	if err := h.PatchObjectLocked(t.Context(), ours); err != nil {
		t.Fatalf("locked patch after a status write: %v", err)
	}
	if got := readNode(); got.Labels["b"] != "2" || len(got.Spec.Taints) != 0 || len(got.Status.Conditions) != 1 {
		t.Fatalf("labels %v, taints %v, conditions %v", got.Labels, got.Spec.Taints, got.Status.Conditions)
	}

	ours = readNode()
	h = patch.New(env.Client, ours)
	theirs = readNode()
	theirs.Spec.Taints = []corev1.Taint{{Key: "theirs", Effect: corev1.TaintEffectNoExecute}}
	if err := env.Client.Update(t.Context(), theirs); err != nil {
		t.Fatal(err)
	}
	ours.Spec.Taints = []corev1.Taint{{Key: "ours", Effect: corev1.TaintEffectNoSchedule}}
	if err := h.PatchObjectLocked(t.Context(), ours); !apierrors.IsConflict(err) {
		t.Fatalf("locked patch of taints they changed: %v, want a Conflict", err)
	}
	if got := readNode().Spec.Taints; len(got) != 1 || got[0].Key != "theirs" {
		t.Fatalf("taints %v: theirs were written over", got)
	}
}
