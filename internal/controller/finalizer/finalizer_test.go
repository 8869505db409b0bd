package finalizer_test

import (
	"context"
	"os"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/controller/finalizer"
	"github.com/millwright-dev/millwright/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) error { env = e; return nil }))
}

const (
	ours   = "example.com/ours"
	theirs = "example.com/theirs"
)

// read returns the ConfigMap as the server has it.
func read(t *testing.T, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	got := &corev1.ConfigMap{}
	if err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(cm), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// theyAdd adds their finalizer on the server, after our read.
func theyAdd(t *testing.T, cm *corev1.ConfigMap) {
	t.Helper()
	now := read(t, cm)
	now.Finalizers = append(now.Finalizers, theirs)
	if err := env.Client.Update(context.Background(), now); err != nil {
		t.Fatal(err)
	}
}

// A write from a stale read is refused, and leaves the other writer's
// finalizer; from a fresh read it keeps it.
func TestWritesNeverDropAnotherFinalizer(t *testing.T) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Namespace: "default"}}
	if err := env.Client.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}

	stale := cm.DeepCopy()
	theyAdd(t, cm)
	if _, err := finalizer.Add(ctx, env.Client, ours, stale); !apierrors.IsConflict(err) {
		t.Fatalf("Add from a stale read: %v; want a Conflict", err)
	}
	if f := read(t, cm).Finalizers; !slices.Equal(f, []string{theirs}) {
		t.Fatalf("finalizers = %v after the refused write; want only %s", f, theirs)
	}

	fresh := read(t, cm)
	fresh.Data = map[string]string{"unwritten": "change"} // a change the caller has not written
	copyOf := fresh.DeepCopy()
	if wrote, err := finalizer.Add(ctx, env.Client, ours, fresh, copyOf); err != nil || !wrote {
		t.Fatalf("Add from a fresh read: wrote %v, %v", wrote, err)
	}
	if f := read(t, cm).Finalizers; !slices.Equal(f, []string{theirs, ours}) {
		t.Fatalf("finalizers = %v; want %s then %s", f, theirs, ours)
	}
	for _, o := range []*corev1.ConfigMap{fresh, copyOf} {
		if !slices.Equal(o.Finalizers, []string{theirs, ours}) || o.ResourceVersion != read(t, cm).ResourceVersion || o.Data["unwritten"] != "change" {
			t.Fatalf("caller's copy = %v %s %v: want the written finalizers and resourceVersion, and its own change kept", o.Finalizers, o.ResourceVersion, o.Data)
		}
	}
	if read(t, cm).Data["unwritten"] != "" {
		t.Fatal("Add wrote more than the finalizers")
	}

	// Removal from a stale read: refused; theirs stays, and so does ours.
	stale = read(t, cm)
	now := read(t, cm)
	now.Labels = map[string]string{"touched": "yes"}
	if err := env.Client.Update(ctx, now); err != nil {
		t.Fatal(err)
	}
	if _, err := finalizer.Remove(ctx, env.Client, ours, stale); !apierrors.IsConflict(err) {
		t.Fatalf("Remove from a stale read: %v; want a Conflict", err)
	}
	fresh = read(t, cm)
	if wrote, err := finalizer.Remove(ctx, env.Client, ours, fresh); err != nil || !wrote {
		t.Fatalf("Remove from a fresh read: wrote %v, %v", wrote, err)
	}
	if f := read(t, cm).Finalizers; !slices.Equal(f, []string{theirs}) {
		t.Fatalf("finalizers = %v; want only %s", f, theirs)
	}
	if wrote, err := finalizer.Remove(ctx, env.Client, ours, fresh); err != nil || wrote {
		t.Fatalf("Remove of a finalizer not there: wrote %v, %v; want nothing written", wrote, err)
	}
	fresh.Finalizers = nil
	if err := env.Client.Update(ctx, fresh); err != nil {
		t.Fatal(err)
	}
}
