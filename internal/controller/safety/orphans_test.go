package safety

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/pkg/driver"
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
		ask     bool // only the driver can confirm
	}{
		{"no Machine", nil, true, false},
		{"Machine owns this VM", machineWith("p1", v1alpha1.PhaseRunning), false, false},
		{"Machine owns another VM", machineWith("p2", v1alpha1.PhaseRunning), true, true},
		{"Machine being deleted owns another VM", machineWith("p2", v1alpha1.PhaseTerminating), true, true},
		{"Machine being created, no providerID yet", machineWith("", v1alpha1.PhaseProvisioning), false, false},
		{"Machine pending, no providerID yet", machineWith("", v1alpha1.PhasePending), false, false},
		{"Machine whose create failed, with another VM", machineWith("p2", v1alpha1.PhaseCrashLoopBackOff, lastOp(v1alpha1.OperationCreate, v1alpha1.OperationFailed)), false, false},
		{"Machine whose initialization failed, with another VM", machineWith("p2", v1alpha1.PhaseCrashLoopBackOff, lastOp(v1alpha1.OperationInitialize, v1alpha1.OperationFailed)), false, false},
		// The phase is a summary written at the end of a reconcile; the
		// fields decide.
		{"phase Running, but its create failed since", machineWith("p2", v1alpha1.PhaseRunning, lastOp(v1alpha1.OperationCreate, v1alpha1.OperationFailed)), false, false},
		{"phase Provisioned, but a create started again", machineWith("p2", v1alpha1.PhaseProvisioned, infraCondition(metav1.ConditionFalse, machine.ReasonCreating)), false, false},
		{"phase CrashLoopBackOff, but the create went through since", machineWith("p2", v1alpha1.PhaseCrashLoopBackOff,
			lastOp(v1alpha1.OperationCreate, v1alpha1.OperationSucceeded), infraCondition(metav1.ConditionTrue, machine.ReasonProvisioned)), true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vm := driver.ListedVM{ProviderID: "p1", MachineName: "m", MachineUID: "u"}
			o, got := judgeVM(vm, tc.machine, tc.machine != nil && tc.machine.Spec.ProviderID == vm.ProviderID)
			if got != tc.orphan || o.askDriver != tc.ask {
				t.Fatalf("orphan = %v (ask the driver: %v), want %v (%v) (%s)", got, o.askDriver, tc.orphan, tc.ask, o.Why)
			}
			if got && o.Why == "" {
				t.Fatal("an orphan needs a reason")
			}
		})
	}
}

// A VM is known by its Machine's UID: a Machine of the same name and
// another UID is another Machine; a VM listed without a UID is known by its
// Machine's name; a VM a live Machine records is never an orphan, whatever
// the Machine it claims.
func TestFindOrphans(t *testing.T) {
	named := func(name, uid, providerID string) *v1alpha1.Machine {
		m := machineWith(providerID, v1alpha1.PhaseRunning)
		m.Name, m.UID = name, types.UID(uid)
		return m
	}
	ix := indexMachines([]*v1alpha1.Machine{
		named("a", "ua", "pa"),
		named("b", "ub", ""),
		named("c", "uc2", "pc-new"), // c was deleted and made again: a new UID and VM
		named("d", "ud", "pd"),
	})
	vms := []driver.ListedVM{
		{ProviderID: "pa", MachineName: "a", MachineUID: "ua"},     // a's own
		{ProviderID: "pa2", MachineName: "a", MachineUID: "ua"},    // a second VM of a: ask the driver
		{ProviderID: "pa3", MachineName: "a"},                      // without a UID: known by name, ask the driver
		{ProviderID: "pb", MachineName: "b", MachineUID: "ub"},     // b is being created
		{ProviderID: "pc-old", MachineName: "c", MachineUID: "uc"}, // the first c's VM: no Machine has its UID
		{ProviderID: "pc-new", MachineName: "c", MachineUID: "uc"}, // recorded by the new c: kept
		{ProviderID: "px", MachineName: "x", MachineUID: "ux"},     // no Machine at all
		{ProviderID: "pd-renamed", MachineName: "d", MachineUID: "ud"},
	}
	got := map[string]bool{}
	for _, o := range findOrphans(vms, ix) {
		got[o.ProviderID] = o.askDriver
	}
	want := map[string]bool{"pa2": true, "pa3": true, "pc-old": false, "px": false, "pd-renamed": true}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("suspected orphans (providerID: ask the driver) = %v, want %v", got, want)
	}
}

func TestSightingsNeedTwoConsecutivePasses(t *testing.T) {
	s := sightings{}
	t0 := time.Unix(0, 0)
	a, b := orphan{ListedVM: driver.ListedVM{ProviderID: "a"}}, orphan{ListedVM: driver.ListedVM{ProviderID: "b"}}
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
