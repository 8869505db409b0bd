package machinefacts

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestPreserveRequestedAndPreserved(t *testing.T) {
	machine := func(ann map[string]string, failed bool, cond *metav1.ConditionStatus) *v1alpha1.Machine {
		m := &v1alpha1.Machine{}
		m.Name, m.Annotations = "m", ann
		if failed {
			m.Status.FailureReason = "HealthTimeout"
		}
		if cond != nil {
			m.Status.Conditions = []metav1.Condition{{Type: v1alpha1.PreservedCondition, Status: *cond}}
		}
		return m
	}
	node := func(v string) *corev1.Node {
		n := &corev1.Node{}
		n.Name, n.Annotations = "n", map[string]string{v1alpha1.PreserveAnnotation: v}
		return n
	}
	p := func(k, v string) map[string]string { return map[string]string{k: v} }
	f, tr := metav1.ConditionFalse, metav1.ConditionTrue
	for _, c := range []struct {
		name    string
		m       *v1alpha1.Machine
		n       *corev1.Node
		reason  string
		invalid bool
		held    bool
	}{
		{"nothing", machine(nil, true, nil), nil, "", false, false},
		{"now on a Running Machine", machine(p(v1alpha1.PreserveAnnotation, "now"), false, nil), nil, v1alpha1.PreservedNowReason, false, true},
		{"when-failed before failing", machine(p(v1alpha1.PreserveAnnotation, "when-failed"), false, nil), nil, "", false, false},
		{"when-failed after failing", machine(p(v1alpha1.PreserveAnnotation, "when-failed"), true, nil), nil, v1alpha1.PreservedWhenFailedReason, false, true},
		{"now on the Node only", machine(nil, false, nil), node("now"), v1alpha1.PreservedNowReason, false, false},
		{"the Machine's false wins over the Node's now", machine(p(v1alpha1.PreserveAnnotation, "false"), false, nil), node("now"), "", false, false},
		{"auto on a failed Machine", machine(p(v1alpha1.AutoPreservedAnnotation, "true"), true, nil), nil, v1alpha1.PreservedAutoReason, false, true},
		{"an unknown value on the Node does not override the Machine's", machine(p(v1alpha1.PreserveAnnotation, "now"), false, nil), node("yes"), v1alpha1.PreservedNowReason, false, true},
		{"an unknown value on the Node when the Machine has none", machine(nil, true, nil), node("yes"), "", true, false},
		{"an unknown value on the Machine", machine(p(v1alpha1.PreserveAnnotation, "yes"), true, nil), node("now"), "", true, false},
		{"the Machine's now wins over the Node's false", machine(p(v1alpha1.PreserveAnnotation, "now"), false, nil), node("false"), v1alpha1.PreservedNowReason, false, true},
		{"the Machine's when-failed decides over the Node's now", machine(p(v1alpha1.PreserveAnnotation, "when-failed"), false, nil), node("now"), "", false, false},
		{"the Node's false keeps an auto-marked Machine", machine(p(v1alpha1.AutoPreservedAnnotation, "true"), true, nil), node("false"), "", false, true},
		{"a PreserveOptedOut condition does not hold", machine(p(v1alpha1.AutoPreservedAnnotation, "true"), true, &f), node("false"), "", false, false},
		{"the condition decides once written", machine(p(v1alpha1.PreserveAnnotation, "now"), false, &f), nil, v1alpha1.PreservedNowReason, false, false},
		{"a True condition holds", machine(nil, true, &tr), nil, "", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := PreserveRequested(c.m, c.n)
			if r.Reason != c.reason || (r.Invalid != "") != c.invalid {
				t.Errorf("PreserveRequested = %+v, want reason %q invalid %v", r, c.reason, c.invalid)
			}
			if got := Preserved(c.m); got != c.held {
				t.Errorf("Preserved = %v, want %v", got, c.held)
			}
		})
	}
}

// Preserved costs no allocation for a Machine without a preserve annotation:
// the set and safety counts ask it of every Machine they count.
func TestPreservedAllocatesNothingWithoutAnnotation(t *testing.T) {
	m := &v1alpha1.Machine{}
	m.Name = "plain"
	m.Annotations = map[string]string{"other": "x"}
	if n := testing.AllocsPerRun(100, func() { Preserved(m) }); n != 0 {
		t.Errorf("Preserved allocates %v times per call, want 0", n)
	}
}
