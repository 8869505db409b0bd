package machinehealthcheck

import (
	"math/rand"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/event"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

var testNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// randomMachine draws a Machine from the values a check reads and the
// ones it does not, so that two draws differ in either.
func randomMachine(rng *rand.Rand) *v1alpha1.Machine {
	pick := func(s ...string) string { return s[rng.Intn(len(s))] }
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "m", Namespace: "ns", Generation: int64(1 + rng.Intn(2)),
		CreationTimestamp: metav1.NewTime(testNow.Add(-time.Hour))}}
	m.Labels = map[string]string{"app": pick("web", "db")}
	m.Annotations = map[string]string{}
	for _, k := range []string{v1alpha1.SkipRemediationAnnotation, v1alpha1.PausedAnnotation, v1alpha1.PreserveAnnotation, v1alpha1.InPlaceTargetAnnotation, "other"} {
		if rng.Intn(3) == 0 {
			m.Annotations[k] = pick("now", "when-failed", "set-b")
		}
	}
	if rng.Intn(4) == 0 {
		m.DeletionTimestamp = &metav1.Time{Time: testNow.Add(-time.Minute)}
	}
	m.Status.FailureReason = pick("", "", "", "VMGone")
	m.Status.Phase = v1alpha1.MachinePhase(pick("Pending", "Running", "Unknown"))
	m.Status.LastOperation.Description = pick("creating", "created", "draining")
	m.Status.Addresses = []v1alpha1.MachineAddress{{Type: "InternalIP", Address: pick("10.0.0.1", "10.0.0.2")}}
	if rng.Intn(3) > 0 {
		m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: pick("n1", "n2")}
	}
	if rng.Intn(3) == 0 {
		m.Status.InPlaceUpdate = &v1alpha1.InPlaceUpdateStatus{TargetSet: pick("set-a", "set-b"),
			Phase: v1alpha1.InPlaceUpdatePhase(pick(string(v1alpha1.InPlaceDraining), string(v1alpha1.InPlaceFailed), "Done"))}
	}
	for _, typ := range []string{v1alpha1.HealthCheckSucceededCondition, v1alpha1.OwnerRemediatedCondition, v1alpha1.PausedCondition,
		v1alpha1.CreateQueuedCondition, v1alpha1.DisruptionAllowedCondition, v1alpha1.PreservedCondition, "DiskPressure"} {
		if rng.Intn(2) == 0 {
			continue
		}
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: typ,
			Status:             metav1.ConditionStatus(pick("True", "False", "Unknown")),
			Reason:             pick(ReasonSucceeded, ReasonExternalRemediation, disruption.ReasonWaitingForBudget),
			Message:            pick(passing().Message, "remediation waits for MachineDisruptionBudget b: none left", "other"),
			ObservedGeneration: int64(1 + rng.Intn(2)),
			LastTransitionTime: metav1.NewTime(testNow.Add(-time.Duration(rng.Intn(20)) * time.Minute)),
		})
	}
	return m
}

// mutate changes one field of m, read by a check or not.
func mutate(rng *rand.Rand, m *v1alpha1.Machine) {
	o := randomMachine(rng)
	switch rng.Intn(11) {
	case 0:
		m.Labels = o.Labels
	case 1:
		m.Annotations = o.Annotations
	case 2:
		m.DeletionTimestamp = o.DeletionTimestamp
	case 3:
		m.Generation = o.Generation
	case 4:
		m.Status.FailureReason = o.Status.FailureReason
	case 5:
		m.Status.NodeRef = o.Status.NodeRef
	case 6:
		m.Status.Conditions = o.Status.Conditions
	case 7:
		m.Status.InPlaceUpdate = o.Status.InPlaceUpdate
	case 8:
		m.Status.Phase = o.Status.Phase
	case 9:
		m.Status.LastOperation = o.Status.LastOperation
	default:
		m.Status.Addresses = o.Status.Addresses
	}
}

// A Machine update checkedChanged drops changes nothing a check decides:
// its selection, its verdict (with or without a Node), whether it may be
// remediated, is in flight, is left out (deleting, failed and preserved),
// waits for a budget, or has its passing recorded. Dropping a field a
// check reads from checkedSame makes some draw fail here.
func TestCheckedSameIsWhatAChecksReads(t *testing.T) {
	rng := rand.New(rand.NewSource(35))
	checks := &v1alpha1.MachineHealthCheckChecks{
		NodeStartupTimeout:      &metav1.Duration{Duration: 10 * time.Minute},
		UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{{Type: "Ready", Status: "False", Timeout: metav1.Duration{Duration: time.Minute}}},
		UnhealthyMachineConditions: []v1alpha1.UnhealthyMachineCondition{
			{Type: "DiskPressure", Status: "True", Timeout: metav1.Duration{Duration: 5 * time.Minute}},
		},
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
		{Type: "Ready", Status: "False", LastTransitionTime: metav1.NewTime(testNow.Add(-2 * time.Minute))}}}}
	sel := &v1alpha1.MachineHealthCheck{Spec: v1alpha1.MachineHealthCheckSpec{
		Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}}
	facts := func(m *v1alpha1.Machine) []any {
		why, ok := remediable(m)
		return []any{
			machinefacts.HealthCheckSelects(sel, labels.Set(m.Labels)),
			judge(checks, m, nil, testNow), judge(checks, m, node, testNow),
			why, ok, !m.DeletionTimestamp.IsZero(), machinefacts.Failed(m) && machinefacts.Preserved(m),
			m.Status.FailureReason, findCondition(m, v1alpha1.OwnerRemediatedCondition),
			recordedPassing(m), disruption.WaitsFor(m, v1alpha1.DisruptionRemediation),
		}
	}
	dropped := 0
	for i := 0; i < 20000; i++ {
		a := randomMachine(rng)
		b := a.DeepCopy()
		mutate(rng, b)
		if !checkedSame(a, b) {
			continue
		}
		dropped++
		if fa, fb := facts(a), facts(b); !reflect.DeepEqual(fa, fb) {
			t.Fatalf("draw %d: an update checkedChanged drops changes what a check decides:\n%v\n%v", i, fa, fb)
		}
	}
	if dropped < 1000 {
		t.Fatalf("only %d updates dropped: the draws do not test the predicate", dropped)
	}
}

// The fast path of remediate skips exactly the Machines recovered would
// not write: recordedPassing(m) is markPassing changing nothing of m.
func TestRecordedPassingIsMarkPassing(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	seen := map[bool]int{}
	for i := 0; i < 20000; i++ {
		m := randomMachine(rng)
		if rng.Intn(3) == 0 {
			// Draws that pass already, with or without a stale generation.
			c := passing()
			c.ObservedGeneration = m.Generation - int64(rng.Intn(2))
			c.LastTransitionTime = metav1.NewTime(testNow.Add(-time.Hour))
			setCondition(&m.Status.Conditions, c, c.ObservedGeneration, testNow)
		}
		marked := m.DeepCopy()
		markPassing(marked, testNow)
		want := equality.Semantic.DeepEqual(marked.Status, m.Status)
		seen[want]++
		if got := recordedPassing(m); got != want {
			t.Fatalf("draw %d: recordedPassing %v, markPassing changes it: %v\n%+v", i, got, !want, m.Status.Conditions)
		}
	}
	if seen[true] < 100 || seen[false] < 100 {
		t.Fatalf("draws unchanged/changed %d/%d: too few of one kind", seen[true], seen[false])
	}
}

// TestNodeEventsThatWakeACheck: a Node's heartbeat does not wake a
// check; a change of a condition's status does, and so does the Node
// coming to name its Machine (a condition that changed before was noted
// for no Machine).
func TestNodeEventsThatWakeACheck(t *testing.T) {
	p := conditionsChanged()
	node := func(ready corev1.ConditionStatus, heartbeat int, machine string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Annotations: map[string]string{}},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready,
				LastHeartbeatTime: metav1.NewTime(time.Unix(int64(heartbeat), 0))}}}}
		if machine != "" {
			n.Annotations[v1alpha1.NodeMachineAnnotation] = machine
			n.Annotations[v1alpha1.NodeClusterNamespaceAnnotation] = "ns"
		}
		return n
	}
	for name, c := range map[string]struct {
		old, new *corev1.Node
		want     bool
	}{
		"a heartbeat":         {node("True", 1, "m"), node("True", 2, "m"), false},
		"Ready turning False": {node("True", 1, "m"), node("False", 2, "m"), true},
		"naming its Machine":  {node("False", 1, ""), node("False", 1, "m"), true},
		"naming another":      {node("False", 1, "m"), node("False", 1, "m2"), true},
	} {
		if got := p.Update(event.TypedUpdateEvent[*corev1.Node]{ObjectOld: c.old, ObjectNew: c.new}); got != c.want {
			t.Errorf("%s: passed %t, want %t", name, got, c.want)
		}
	}
}
