package disruption

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
)

var drawNow = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// drawMachine draws a Machine from the values a budget reads: selection,
// namespace, set, deletion, failure and preservation, readiness, in-place
// updates, remediation, and the wait for a budget.
func drawMachine(rng *rand.Rand, name string) *v1alpha1.Machine {
	pick := func(s ...string) string { return s[rng.Intn(len(s))] }
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: pick("ns", "ns", "ns", "ns", "ns2"),
		Labels: map[string]string{"pool": pick("a", "a", "a", "b")}}}
	if rng.Intn(3) == 0 {
		m.Labels["cluster"] = "prod"
	}
	if rng.Intn(4) == 0 {
		m.Annotations = map[string]string{v1alpha1.InPlaceTargetAnnotation: pick("new", "old")}
	}
	if set := pick("", "s1", "s2", "s3", "s3", "s4"); set != "" {
		yes := true
		m.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet", Name: set,
			UID: types.UID("uid-" + set), Controller: &yes}}
	}
	if rng.Intn(6) == 0 {
		m.DeletionTimestamp = &metav1.Time{Time: drawNow.Add(-time.Minute)}
	}
	if rng.Intn(6) == 0 {
		m.Status.FailureReason = "VMGone"
	}
	if rng.Intn(4) == 0 {
		m.Status.InPlaceUpdate = &v1alpha1.InPlaceUpdateStatus{TargetSet: pick("new", "old"),
			Phase: v1alpha1.InPlaceUpdatePhase(pick(string(v1alpha1.InPlaceDraining), string(v1alpha1.InPlaceUpdating),
				string(v1alpha1.InPlaceFailed), string(v1alpha1.InPlaceRefused)))}
	}
	m.Status.Phase = v1alpha1.PhaseRunning
	for _, typ := range []string{v1alpha1.ReadyCondition, v1alpha1.ReadyCondition, v1alpha1.ReadyCondition, v1alpha1.OwnerRemediatedCondition,
		v1alpha1.HealthCheckSucceededCondition, v1alpha1.DisruptionAllowedCondition, v1alpha1.PreservedCondition} {
		if rng.Intn(2) == 0 || (typ != v1alpha1.ReadyCondition && rng.Intn(2) == 0) {
			continue
		}
		m.Status.Conditions = append(m.Status.Conditions, metav1.Condition{Type: typ,
			Status:  metav1.ConditionStatus(pick("True", "True", "False")),
			Reason:  pick(v1alpha1.ExternalRemediationRequestedReason, ReasonWaitingForBudget, v1alpha1.PreservedWhenFailedReason, "Other"),
			Message: pick("Rollout waits for MachineDisruptionBudget b: none left", "other"),
		})
	}
	return m
}

// drawOwners: s1 and s2 are a deployment's (size 0–4), s3 a set alone
// (size 0–3), s4 a set whose owner is not known.
func drawOwners(rng *rand.Rand) Owners {
	md, alone := int32(rng.Intn(5)), int32(rng.Intn(4))
	return func(set string) (string, int32, bool) {
		switch set {
		case "s1", "s2":
			return "MachineDeployment/web", md, true
		case "s3":
			return "MachineSet/s3", alone, true
		}
		return "", 0, false
	}
}

func drawBudget(rng *rand.Rand, names []string) *v1alpha1.MachineDisruptionBudget {
	b := &v1alpha1.MachineDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", UID: "uid-b", Generation: 1},
		Spec: v1alpha1.MachineDisruptionBudgetSpec{
			Selector:       v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}},
			MaxUnavailable: []intstr.IntOrString{intstr.FromInt32(int32(rng.Intn(3))), intstr.FromString("50%")}[rng.Intn(2)],
		}}
	kinds := []v1alpha1.DisruptionKind{v1alpha1.DisruptionRollout, v1alpha1.DisruptionRemediation, v1alpha1.DisruptionInPlaceUpdate, v1alpha1.DisruptionScaleDown}
	for _, n := range names {
		if rng.Intn(3) == 0 {
			b.Status.DisruptedMachines = append(b.Status.DisruptedMachines, v1alpha1.DisruptedMachine{Name: n, Kind: kinds[rng.Intn(len(kinds))],
				GrantedAt: metav1.NewTime(drawNow.Add(-time.Duration(rng.Intn(180)) * time.Second))})
		}
	}
	return b
}

func otherBudgets() []v1alpha1.MachineDisruptionBudget {
	of := func(name string, sel map[string]string) v1alpha1.MachineDisruptionBudget {
		return v1alpha1.MachineDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
			Spec: v1alpha1.MachineDisruptionBudgetSpec{Selector: v1alpha1.LabelSelector{MatchLabels: sel}}}
	}
	return []v1alpha1.MachineDisruptionBudget{of("b", map[string]string{"pool": "a"}), of("cluster", map[string]string{"cluster": "prod"}),
		of("pool-b", map[string]string{"pool": "b"}), of("empty", nil)}
}

// TestTallyKeptEqualsTallyMadeAfresh puts and removes drawn Machines in a
// kept tally, and after each step compares it with a tally made from its
// Machines (Check) and its Evaluate and Overlapping with those of the
// Machines read afresh.
func TestTallyKeptEqualsTallyMadeAfresh(t *testing.T) {
	rng := rand.New(rand.NewSource(35))
	others := otherBudgets()
	for draw := 0; draw < 300; draw++ {
		names := make([]string, 8)
		for i := range names {
			names[i] = fmt.Sprintf("m%d", i)
		}
		b := drawBudget(rng, names)
		owners := drawOwners(rng)
		kept, err := NewTally(b, others)
		if err != nil {
			t.Fatal(err)
		}
		kept.KeepMachines()
		current := map[string]*v1alpha1.Machine{}
		for step := 0; step < 40; step++ {
			name := names[rng.Intn(len(names))]
			if rng.Intn(4) == 0 {
				kept.Remove(name)
				delete(current, name)
			} else {
				m := drawMachine(rng, name)
				kept.Put(m)
				if m.Namespace == b.Namespace {
					current[name] = m
				} else {
					delete(current, name) // Put reads no Machine of another namespace, and its name's was replaced
					kept.Remove(name)
				}
			}
			if d := kept.Check(); d != "" {
				t.Fatalf("draw %d step %d: %s", draw, step, d)
			}
			var machines []*v1alpha1.Machine
			for _, m := range current {
				machines = append(machines, m)
			}
			want, err1 := Evaluate(b, machines, owners, drawNow)
			got, err2 := kept.Evaluate(b, owners, drawNow)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if !reflect.DeepEqual(want, got) {
				t.Fatalf("draw %d step %d: kept %+v, afresh %+v", draw, step, got, want)
			}
			if want, got := tallyOf(t, b, others, machines).Overlapping(), kept.Overlapping(); !reflect.DeepEqual(want, got) {
				t.Fatalf("draw %d step %d: overlapping kept %v, afresh %v", draw, step, got, want)
			}
		}
	}
}

// tallyOf is a tally of b made from machines.
func tallyOf(t *testing.T, b *v1alpha1.MachineDisruptionBudget, others []v1alpha1.MachineDisruptionBudget, machines []*v1alpha1.Machine) *Tally {
	t.Helper()
	tally, err := NewTally(b, others)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range machines {
		tally.Put(m)
	}
	return tally
}
