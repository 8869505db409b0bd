package contracttest

import (
	"context"
	"fmt"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The contract fields, read from an unstructured InfraMachine.

func providerID(u *unstructured.Unstructured) string {
	v, _, _ := unstructured.NestedString(u.Object, "spec", "providerID")
	return v
}

// initialized is the contract's "initialization completed": status.ready
// or status.initialization.provisioned.
func initialized(u *unstructured.Unstructured) bool {
	ready, _, _ := unstructured.NestedBool(u.Object, "status", "ready")
	provisioned, _, _ := unstructured.NestedBool(u.Object, "status", "initialization", "provisioned")
	return ready || provisioned
}

func failure(u *unstructured.Unstructured) (reason, message string) {
	reason, _, _ = unstructured.NestedString(u.Object, "status", "failureReason")
	message, _, _ = unstructured.NestedString(u.Object, "status", "failureMessage")
	return reason, message
}

// condition returns the status.conditions entry of the type, or nil.
func condition(u *unstructured.Unstructured, condType string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == condType {
			return m
		}
	}
	return nil
}

func conditionStatus(u *unstructured.Unstructured, condType string) string {
	if c := condition(u, condType); c != nil {
		s, _ := c["status"].(string)
		return s
	}
	return ""
}

// eventually polls the InfraMachine until cond holds or the timeout ends,
// and returns it as cond last saw it.
func (w *world) eventually(what string, cond func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	w.t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, w.s.Timeout, true, func(context.Context) (bool, error) {
		u, err := w.tryGet()
		if err != nil {
			return false, err
		}
		last = u
		return cond(u), nil
	})
	if err != nil {
		w.t.Fatalf("waiting %s for %s %s %s: %v\nlast seen: %v", w.s.Timeout, w.s.InfraMachine.Kind, w.name, what, err, describe(last))
	}
	return last
}

// ready waits for the contract's initialization completed.
func (w *world) ready() *unstructured.Unstructured {
	w.t.Helper()
	return w.eventually("to report initialization completed (status.ready or status.initialization.provisioned)", initialized)
}

// never watches the InfraMachine for Config.Quiet and fails if cond ever
// holds: progress that must not happen.
func (w *world) never(what string, cond func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	w.t.Helper()
	deadline := time.Now().Add(w.s.Quiet)
	var last *unstructured.Unstructured
	for time.Now().Before(deadline) {
		last = w.get()
		if cond(last) {
			w.t.Fatalf("%s %s %s\nseen: %v", w.s.InfraMachine.Kind, w.name, what, describe(last))
		}
		time.Sleep(100 * time.Millisecond)
	}
	return last
}

// gone waits until the InfraMachine no longer exists.
func (w *world) gone() {
	w.t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, w.s.Timeout, true, func(context.Context) (bool, error) {
		_, err := w.tryGet()
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
	if err != nil {
		u, _ := w.tryGet()
		w.t.Fatalf("waiting %s for %s %s to be deleted: %v\nlast seen: %v", w.s.Timeout, w.s.InfraMachine.Kind, w.name, err, describe(u))
	}
}

// describe shows the parts of an InfraMachine a failure message needs.
func describe(u *unstructured.Unstructured) string {
	if u == nil {
		return "<nothing>"
	}
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	status, _, _ := unstructured.NestedMap(u.Object, "status")
	delete(spec, "providerSpec") // long and not part of the contract
	return fmt.Sprintf("finalizers=%v annotations=%v spec=%v status=%v", u.GetFinalizers(), u.GetAnnotations(), spec, status)
}

// validAddressTypes are the MachineAddress types the contract accepts.
var validAddressTypes = []string{"Hostname", "ExternalIP", "InternalIP", "ExternalDNS", "InternalDNS"}

func validAddressType(t string) bool { return slices.Contains(validAddressTypes, t) }
