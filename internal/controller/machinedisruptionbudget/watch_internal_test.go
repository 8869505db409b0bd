package machinedisruptionbudget

import (
	"fmt"
	"math/rand"
	"reflect"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
)

var testNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// randomMachine draws a Machine from the values a budget reads and the
// ones it does not, so that two draws differ in either.
func randomMachine(rng *rand.Rand, name string) *v1alpha1.Machine {
	pick := func(s ...string) string { return s[rng.Intn(len(s))] }
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Generation: int64(1 + rng.Intn(2))}}
	m.Labels = map[string]string{"app": pick("web", "web", "db")}
	m.Annotations = map[string]string{}
	for _, k := range []string{v1alpha1.PreserveAnnotation, v1alpha1.InPlaceTargetAnnotation, "other"} {
		if rng.Intn(3) == 0 {
			m.Annotations[k] = pick("now", "when-failed", "set-b")
		}
	}
	if set := pick("", "set-a", "set-b", "set-b"); set != "" {
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet", Name: set,
			UID: types.UID("uid-" + set), Controller: ptrTo(true)}}
	}
	if rng.Intn(5) == 0 {
		m.DeletionTimestamp = &metav1.Time{Time: testNow.Add(-time.Minute)}
	}
	m.Status.FailureReason = pick("", "", "", "VMGone")
	m.Status.Phase = v1alpha1.MachinePhase(pick("Pending", "Running", "Unknown"))
	m.Status.LastOperation.Description = pick("creating", "created", "draining")
	m.Status.Addresses = []v1alpha1.MachineAddress{{Type: "InternalIP", Address: pick("10.0.0.1", "10.0.0.2")}}
	if rng.Intn(2) == 0 {
		m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: pick("n1", "n2")}
	}
	if rng.Intn(3) == 0 {
		m.Status.InPlaceUpdate = &v1alpha1.InPlaceUpdateStatus{TargetSet: pick("set-a", "set-b"),
			Phase: v1alpha1.InPlaceUpdatePhase(pick(string(v1alpha1.InPlaceDraining), string(v1alpha1.InPlaceFailed), "Done"))}
	}
	for _, typ := range []string{v1alpha1.ReadyCondition, v1alpha1.ReadyCondition, v1alpha1.OwnerRemediatedCondition, v1alpha1.HealthCheckSucceededCondition,
		v1alpha1.InterruptedCondition, v1alpha1.DisruptionAllowedCondition, v1alpha1.PreservedCondition} {
		if rng.Intn(2) == 0 {
			continue
		}
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: typ,
			Status:             metav1.ConditionStatus(pick("True", "True", "False")),
			Reason:             pick(v1alpha1.ExternalRemediationRequestedReason, disruption.ReasonWaitingForBudget, "Other"),
			Message:            pick("remediation waits for MachineDisruptionBudget b: none left", "other"),
			LastTransitionTime: metav1.NewTime(testNow.Add(-time.Duration(rng.Intn(20)) * time.Minute)),
		})
	}
	return m
}

func ptrTo[T any](v T) *T { return &v }

// mutate changes one field of m, read by a budget or not.
func mutate(rng *rand.Rand, m *v1alpha1.Machine) {
	o := randomMachine(rng, m.Name)
	switch rng.Intn(11) {
	case 0:
		m.Labels = o.Labels
	case 1:
		m.Annotations = o.Annotations
	case 2:
		m.DeletionTimestamp = o.DeletionTimestamp
	case 3:
		m.OwnerReferences = o.OwnerReferences
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
		m.Generation = o.Generation
	default:
		m.Status.LastOperation = o.Status.LastOperation
	}
}

// A Machine update countedChanged drops changes nothing of any budget's
// recount: disruption.Evaluate of a namespace with the Machine before the
// update and after it are the same, with owners grouping some Machines
// and pending grants on some. Dropping a field a budget reads from
// countedSame makes some draw fail here.
func TestCountedSameIsWhatABudgetCounts(t *testing.T) {
	rng := rand.New(rand.NewSource(35))
	owners := func(set string) (string, int32, bool) {
		return "MachineSet/" + set, int32(len(set)) - 3, true // set-a: 2, set-b: 2
	}
	dropped := 0
	for i := 0; i < 20000; i++ {
		b := &v1alpha1.MachineDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns"},
			Spec: v1alpha1.MachineDisruptionBudgetSpec{
				Selector:       v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
				MaxUnavailable: intstr.FromInt32(int32(rng.Intn(3))),
			}}
		machines := make([]v1alpha1.Machine, 4)
		for j := range machines {
			machines[j] = *randomMachine(rng, fmt.Sprintf("m%d", j))
			if rng.Intn(3) == 0 {
				b.Status.DisruptedMachines = append(b.Status.DisruptedMachines, v1alpha1.DisruptedMachine{Name: machines[j].Name,
					Kind:      v1alpha1.DisruptionKind([]string{string(v1alpha1.DisruptionRemediation), string(v1alpha1.DisruptionInPlaceUpdate)}[rng.Intn(2)]),
					GrantedAt: metav1.NewTime(testNow.Add(-time.Minute))})
			}
		}
		after := make([]v1alpha1.Machine, len(machines))
		for j := range machines {
			after[j] = *machines[j].DeepCopy()
		}
		k := rng.Intn(len(after))
		mutate(rng, &after[k])
		if !countedSame(&machines[k], &after[k]) {
			continue
		}
		dropped++
		want, err1 := disruption.Evaluate(b, pointers(machines), owners, testNow)
		got, err2 := disruption.Evaluate(b, pointers(after), owners, testNow)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("draw %d: an update countedChanged drops changes the budget's count:\nbefore %+v\nafter  %+v", i, want, got)
		}
	}
	if dropped < 1000 {
		t.Fatalf("only %d updates dropped: the draws do not test the predicate", dropped)
	}
}

// pointers is what Evaluate takes of ms: a pointer to each.
func pointers(ms []v1alpha1.Machine) []*v1alpha1.Machine {
	out := make([]*v1alpha1.Machine, len(ms))
	for i := range ms {
		out[i] = &ms[i]
	}
	return out
}
