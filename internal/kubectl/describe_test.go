package kubectl_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestDescribeTimeline: a Machine that ran and went Unknown, its Node
// gone; its steps come from its conditions, last operation and Events of
// both APIs, each dated relative to its creation so the golden timeline's
// durations are exact.
func TestDescribeTimeline(t *testing.T) {
	const ns = "golden-describe"
	namespace(t, ns)
	m := machine(t, ns, "web-fffff", "small", "web", "web-111", "sim://r/a/vm-9", nil)
	c0 := m.CreationTimestamp.Time
	at := func(d time.Duration) time.Time { return c0.Add(d) }
	m.Status.Phase = v1alpha1.PhaseUnknown
	m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: "web-fffff-gone"}
	m.Status.UnhealthySince = &metav1.Time{Time: at(10 * time.Minute)}
	m.Status.Conditions = []metav1.Condition{
		cond(v1alpha1.BootstrapReadyCondition, "True", "BootstrapDataReady", "", at(time.Second)),
		cond(v1alpha1.InfrastructureReadyCondition, "True", "Provisioned", "", at(40*time.Second)),
		cond(v1alpha1.NodeReadyCondition, "False", "NodeNotFound", "Node web-fffff-gone is gone", at(10*time.Minute)),
		cond(v1alpha1.ReadyCondition, "False", "Unhealthy", "the Node is gone", at(10*time.Minute)),
	}
	m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.OperationHealthCheck, State: v1alpha1.OperationFailed,
		Description: "Node web-fffff-gone is gone", LastUpdateTime: metav1.NewTime(at(10*time.Minute + 30*time.Second))}
	setStatus(t, m)
	// What controller-runtime's recorder writes (events.k8s.io/v1) ...
	create(t, &eventsv1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: "web-fffff.created", Namespace: ns},
		EventTime:  metav1.NewMicroTime(at(38 * time.Second)), ReportingController: "machine-controller", ReportingInstance: "test",
		Action: "Reconcile", Reason: "CreateSucceeded", Note: "created VM vm-9", Type: corev1.EventTypeNormal,
		Regarding: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine", Namespace: ns, Name: m.Name, UID: m.UID},
	})
	// ... and what an older recorder writes (core/v1), repeated.
	create(t, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web-fffff.unknown", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine", Namespace: ns, Name: m.Name, UID: m.UID},
		Reason:         "PhaseUnknown", Message: "machine phase changed from Running to Unknown", Type: corev1.EventTypeWarning,
		FirstTimestamp: metav1.NewTime(at(10 * time.Minute)), LastTimestamp: metav1.NewTime(at(11 * time.Minute)), Count: 3,
		Source: corev1.EventSource{Component: "machine-controller"},
	})
	// An Event of another object does not show.
	create(t, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "other", Namespace: ns},
		InvolvedObject: corev1.ObjectReference{Kind: "Machine", Namespace: ns, Name: "other", UID: "uid-other"},
		Reason:         "CreateSucceeded", Message: "not this Machine", Type: corev1.EventTypeNormal,
		FirstTimestamp: metav1.NewTime(at(time.Second)), LastTimestamp: metav1.NewTime(at(time.Second)),
	})
	c := newCLI(t, ns)
	c.now = at(12 * time.Minute)
	golden(t, "describe-unknown", c.ok("describe", "machine", "web-fffff"))
	if out := c.ok("describe", "mach", "web-fffff"); !strings.Contains(out, "Phase:        Unknown") {
		t.Errorf("describe mach (short name): %s", out)
	}
}

// TestDescribePreservedMachine: a preserved Failed Machine waits for the
// end of its preservation, not for its MachineSet to replace it.
func TestDescribePreservedMachine(t *testing.T) {
	const ns = "describe-preserved"
	namespace(t, ns)
	m := machine(t, ns, "web-kept", "small", "web", "web-111", "sim://r/a/vm-7", nil)
	m.Status.Phase = v1alpha1.PhaseFailed
	m.Status.FailureReason = "HealthTimeout"
	m.Status.Conditions = []metav1.Condition{
		cond(v1alpha1.PreservedCondition, "True", v1alpha1.PreservedAutoReason, "its MachineSet keeps it; preserved until 2026-01-02T03:04:05Z", m.CreationTimestamp.Time),
	}
	setStatus(t, m)
	out := newCLI(t, ns).ok("describe", "machine", "web-kept")
	if !strings.Contains(out, "Waiting for:  the end of its preservation") || !strings.Contains(out, "preserved until 2026-01-02T03:04:05Z") {
		t.Errorf("describe of a preserved Machine:\n%s", out)
	}
}

// TestDescribeInterruptedMachine: a Running Machine whose provider takes
// its VM away waits for its MachineSet to replace it, and says when the
// VM goes (docs/interruptions.md).
func TestDescribeInterruptedMachine(t *testing.T) {
	const ns = "describe-interrupted"
	namespace(t, ns)
	m := machine(t, ns, "web-spot", "small", "web", "web-111", "sim://r/a/vm-8", nil)
	m.Status.Phase = v1alpha1.PhaseRunning
	m.Status.Conditions = []metav1.Condition{
		cond(v1alpha1.InterruptedCondition, "True", v1alpha1.InterruptionReason, "driver aws: EC2 Spot Instance Interruption Warning: instance-action terminate", m.CreationTimestamp.Time),
	}
	m.Status.InterruptionDeadline = &metav1.Time{Time: time.Date(2026, 1, 2, 3, 6, 5, 0, time.UTC)}
	setStatus(t, m)
	out := newCLI(t, ns).ok("describe", "machine", "web-spot")
	if !strings.Contains(out, "Waiting for:  its MachineSet to create its replacement and delete it: its provider takes the VM away in") ||
		!strings.Contains(out, "(2026-01-02T03:06:05Z): driver aws: EC2 Spot Instance Interruption Warning") {
		t.Errorf("describe of an interrupted Machine:\n%s", out)
	}
}
