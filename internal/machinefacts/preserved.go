package machinefacts

// What the machine, MachineSet, MachineDeployment and safety controllers
// and the disruption budgets must agree on about Machine preservation
// (docs/preservation.md): which preserve requests a Machine and its Node
// carry, and whether its owner must keep it out of its counts and never
// delete it.

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// PreserveRequest is what a Machine's and its Node's annotations ask for.
type PreserveRequest struct {
	// Reason is the Preserved condition's reason when the Machine is to be
	// kept now; empty when nothing asks for it (yet).
	Reason string
	// Source says, for people, which annotation asks.
	Source string
	// Invalid, when set, says which annotation has an unknown value: the
	// Machine is not preserved until it is fixed.
	Invalid string
}

// Failed reports whether the Machine failed for good.
func Failed(m *v1alpha1.Machine) bool { return m.Status.FailureReason != "" }

// PreserveRequested reads the preserve annotations of m and of its Node (nil when
// it has none). The Machine's annotation decides whenever it is there: the
// Node's is read only when the Machine has none (docs/preservation.md).
// "false" on the one that decides keeps the Machine from being preserved
// at all, automatically or not.
func PreserveRequested(m *v1alpha1.Machine, node *corev1.Node) PreserveRequest {
	value, ok := m.Annotations[v1alpha1.PreserveAnnotation]
	onNode := !ok && node != nil
	if onNode {
		value, ok = node.Annotations[v1alpha1.PreserveAnnotation]
	}
	// The words are made only when an annotation is there: Preserved asks this
	// of every Machine of a set at every count (docs/benchmarks.md).
	where := func() string {
		if onNode {
			return "Node " + node.Name
		}
		return "Machine " + m.Name
	}
	source := func() string { return where() + " has " + v1alpha1.PreserveAnnotation + "=" + value }
	switch {
	case !ok:
	case value == v1alpha1.PreserveNever:
		return PreserveRequest{}
	case value == v1alpha1.PreserveNow:
		return PreserveRequest{Reason: v1alpha1.PreservedNowReason, Source: source()}
	case value == v1alpha1.PreserveWhenFailed:
		if Failed(m) {
			return PreserveRequest{Reason: v1alpha1.PreservedWhenFailedReason, Source: source() + " and the Machine failed"}
		}
	default:
		return PreserveRequest{Invalid: fmt.Sprintf("%s has %s=%q; the known values are %q, %q and %q",
			where(), v1alpha1.PreserveAnnotation, value, v1alpha1.PreserveNow, v1alpha1.PreserveWhenFailed, v1alpha1.PreserveNever)}
	}
	if Failed(m) && AutoPreserved(m) {
		return PreserveRequest{Reason: v1alpha1.PreservedAutoReason, Source: "its MachineSet keeps it under spec.autoPreserveFailedMax"}
	}
	return PreserveRequest{}
}

// Preserved reports whether an owner must keep m: not count it as one of its
// replicas, not delete it, and create its replacement. The Preserved
// condition decides once the machine controller has written it; before
// that, the Machine's own annotations do, so that a Machine that fails
// with preservation asked is never deleted in the moment before its
// condition is written.
func Preserved(m *v1alpha1.Machine) bool {
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.PreservedCondition); c != nil {
		return c.Status == metav1.ConditionTrue
	}
	r := PreserveRequested(m, nil)
	return r.Reason != ""
}

// AutoPreserved reports whether m is kept under its MachineSet's autoPreserveFailedMax.
func AutoPreserved(m *v1alpha1.Machine) bool {
	return m.Annotations[v1alpha1.AutoPreservedAnnotation] == "true"
}

// PreserveOptedOut reports whether m's own annotation forbids preserving it.
func PreserveOptedOut(m *v1alpha1.Machine) bool {
	return m.Annotations[v1alpha1.PreserveAnnotation] == v1alpha1.PreserveNever
}
