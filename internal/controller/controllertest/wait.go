package controllertest

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// Create creates obj or fails the test.
func (h *Harness) Create(obj client.Object) {
	h.T.Helper()
	if err := Env.Client.Create(context.Background(), obj); err != nil {
		h.T.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// Get returns the Machine Prefix+name.
func (h *Harness) Get(name string) *v1alpha1.Machine {
	h.T.Helper()
	m := &v1alpha1.Machine{}
	if err := Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: h.Prefix + name}, m); err != nil {
		h.T.Fatalf("getting machine %s: %v", name, err)
	}
	return m
}

// Eventually polls cond every 100ms until it is true or timeout passes. It
// checks cond at once and returns as soon as it holds, so it is no way to
// let time pass: for "this stays so for a while" use Consistently.
// TestNoConstantWaitConditions refuses a constant condition.
func (h *Harness) Eventually(timeout time.Duration, what string, cond func() (bool, error)) {
	h.T.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) { return cond() })
	if err != nil {
		h.T.Fatalf("waiting %s for %s: %v", timeout, what, err)
	}
}

// Consistently polls cond every 100ms for d and fails the test as soon as
// it is false or errs: the check that something does not happen.
func (h *Harness) Consistently(d time.Duration, what string, cond func() (bool, error)) {
	h.T.Helper()
	testenv.Consistently(h.T, d, what, cond)
}

// WaitPhase waits until the Machine Prefix+name reaches phase and returns it.
func (h *Harness) WaitPhase(name string, phase v1alpha1.MachinePhase, timeout time.Duration) *v1alpha1.Machine {
	h.T.Helper()
	var m *v1alpha1.Machine
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true,
		func(context.Context) (bool, error) {
			m = h.Get(name)
			return m.Status.Phase == phase, nil
		})
	if err != nil {
		h.T.Fatalf("machine %s did not reach %s within %s; phase %q, lastOperation %+v, conditions %+v",
			name, phase, timeout, m.Status.Phase, m.Status.LastOperation, m.Status.Conditions)
	}
	return m
}

// Node returns the Node called name.
func (h *Harness) Node(name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	err := Env.Client.Get(context.Background(), client.ObjectKey{Name: name}, n)
	return n, err
}

// ExpectEvent waits for an Event with reason on any of the named objects (without prefix).
func (h *Harness) ExpectEvent(reason string, names ...string) {
	h.T.Helper()
	h.Eventually(10*time.Second, "an Event "+reason, func() (bool, error) {
		events := &corev1.EventList{}
		if err := Env.Client.List(context.Background(), events, client.InNamespace(h.NS)); err != nil {
			return false, err
		}
		for _, e := range events.Items {
			for _, n := range names {
				if (e.InvolvedObject.Name == h.Prefix+n || e.InvolvedObject.Name == n) && e.Reason == reason {
					return true, nil
				}
			}
		}
		return false, nil
	})
}

// DeleteMachine deletes the Machine Prefix+name.
func (h *Harness) DeleteMachine(name string) {
	h.T.Helper()
	if err := Env.Client.Delete(context.Background(), h.Get(name)); err != nil {
		h.T.Fatal(err)
	}
}

// WaitStep waits until the deletion of Machine Prefix+name is at step.
func (h *Harness) WaitStep(name string, step v1alpha1.DeletionStep) *v1alpha1.Machine {
	h.T.Helper()
	var m *v1alpha1.Machine
	h.Eventually(15*time.Second, "deletion step "+string(step), func() (bool, error) {
		m = h.Get(name)
		return m.Status.Deletion != nil && m.Status.Deletion.Step == step, nil
	})
	return m
}

// RemoveAnnotation removes an annotation from the Machine Prefix+name.
func (h *Harness) RemoveAnnotation(name, key string) {
	h.T.Helper()
	m := h.Get(name)
	patch := client.MergeFrom(m.DeepCopy())
	delete(m.Annotations, key)
	if err := Env.Client.Patch(context.Background(), m, patch); err != nil {
		h.T.Fatal(err)
	}
}

// WaitGone waits until the Machine Prefix+name no longer exists.
func (h *Harness) WaitGone(name string) {
	h.T.Helper()
	h.Eventually(20*time.Second, "machine "+name+" to be gone", func() (bool, error) {
		err := Env.Client.Get(context.Background(), client.ObjectKey{Namespace: h.NS, Name: h.Prefix + name}, &v1alpha1.Machine{})
		return apierrors.IsNotFound(err), client.IgnoreNotFound(err)
	})
}
