package safety

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// machineWith is a Machine with providerID whose status.phase says phase;
// edit sets the fields (which decide).
func machineWith(providerID string, phase v1alpha1.MachinePhase, edit ...func(*v1alpha1.Machine)) *v1alpha1.Machine {
	m := &v1alpha1.Machine{}
	m.Spec.ProviderID = providerID
	m.Status.Phase = phase
	for _, e := range edit {
		e(m)
	}
	return m
}

func lastOp(t v1alpha1.MachineOperationType, s v1alpha1.MachineOperationState) func(*v1alpha1.Machine) {
	return func(m *v1alpha1.Machine) { m.Status.LastOperation = v1alpha1.LastOperation{Type: t, State: s} }
}

func infraCondition(status metav1.ConditionStatus, reason string) func(*v1alpha1.Machine) {
	return func(m *v1alpha1.Machine) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: v1alpha1.InfrastructureReadyCondition, Status: status, Reason: reason})
	}
}

func TestJudgeVM(t *testing.T) {
	for _, tc := range []struct {
		name    string
		machine *v1alpha1.Machine
		orphan  bool
	}{
		{"no Machine", nil, true},
		{"Machine owns this VM", machineWith("p1", v1alpha1.PhaseRunning), false},
		{"Machine owns another VM", machineWith("p2", v1alpha1.PhaseRunning), true},
		{"Machine being deleted owns another VM", machineWith("p2", v1alpha1.PhaseTerminating), true},
		{"Machine being created, no providerID yet", machineWith("", v1alpha1.PhaseProvisioning), false},
		{"Machine pending, no providerID yet", machineWith("", v1alpha1.PhasePending), false},
		{"Machine whose create failed, with another VM", machineWith("p2", v1alpha1.PhaseCrashLoopBackOff, lastOp(v1alpha1.OperationCreate, v1alpha1.OperationFailed)), false},
		{"Machine whose initialization failed, with another VM", machineWith("p2", v1alpha1.PhaseCrashLoopBackOff, lastOp(v1alpha1.OperationInitialize, v1alpha1.OperationFailed)), false},
		// The phase is a summary written at the end of a reconcile; the
		// fields decide.
		{"phase Running, but its create failed since", machineWith("p2", v1alpha1.PhaseRunning, lastOp(v1alpha1.OperationCreate, v1alpha1.OperationFailed)), false},
		{"phase Provisioned, but a create started again", machineWith("p2", v1alpha1.PhaseProvisioned, infraCondition(metav1.ConditionFalse, machine.ReasonCreating)), false},
		{"phase CrashLoopBackOff, but the create went through since", machineWith("p2", v1alpha1.PhaseCrashLoopBackOff,
			lastOp(v1alpha1.OperationCreate, v1alpha1.OperationSucceeded), infraCondition(metav1.ConditionTrue, machine.ReasonProvisioned)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, got := judgeVM("p1", "m", tc.machine)
			if got != tc.orphan {
				t.Fatalf("orphan = %v, want %v (%s)", got, tc.orphan, o.Why)
			}
			if got && o.Why == "" {
				t.Fatal("an orphan needs a reason")
			}
		})
	}
}

func TestFindOrphans(t *testing.T) {
	machines := map[string]*v1alpha1.Machine{
		"a": machineWith("pa", v1alpha1.PhaseRunning),
		"b": machineWith("", v1alpha1.PhaseProvisioning),
	}
	got := findOrphans(map[string]string{"pa": "a", "pa2": "a", "pb": "b", "px": "x"}, func(n string) *v1alpha1.Machine { return machines[n] })
	if len(got) != 2 || got[0].ProviderID != "pa2" || got[1].ProviderID != "px" {
		t.Fatalf("orphans = %+v, want pa2 and px", got)
	}
}

func TestSightingsNeedTwoConsecutivePasses(t *testing.T) {
	s := sightings{}
	t0 := time.Unix(0, 0)
	a, b := orphan{ProviderID: "a"}, orphan{ProviderID: "b"}
	steps := []struct {
		found     []orphan
		confirmed []string
		fresh     int
	}{
		{[]orphan{a}, nil, 1},              // first sighting of a
		{[]orphan{a, b}, []string{"a"}, 1}, // a confirmed, b new
		{nil, nil, 0},                      // neither seen: both forgotten
		{[]orphan{b}, nil, 1},              // b starts over
		{[]orphan{b}, []string{"b"}, 0},    // b confirmed
	}
	for i, st := range steps {
		confirmed, fresh := s.advance("c", st.found, t0.Add(time.Duration(i)*time.Second))
		var ids []string
		for _, o := range confirmed {
			ids = append(ids, o.ProviderID)
		}
		if len(ids) != len(st.confirmed) || (len(ids) > 0 && ids[0] != st.confirmed[0]) || fresh != st.fresh {
			t.Fatalf("pass %d: confirmed %v fresh %d, want %v %d", i, ids, fresh, st.confirmed, st.fresh)
		}
	}
	s.forget("c", "b")
	if confirmed, fresh := s.advance("c", []orphan{b}, t0); len(confirmed) != 0 || fresh != 1 {
		t.Fatalf("a forgotten VM must start over: confirmed %v fresh %d", confirmed, fresh)
	}
}
