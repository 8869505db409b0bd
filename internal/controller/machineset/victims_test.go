package machineset

import (
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func mach(name string, phase v1alpha1.MachinePhase, age time.Duration, annotations map[string]string, withNode bool) *v1alpha1.Machine {
	m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{
		Name: name, Annotations: annotations,
		CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(-age)),
	}}
	setPhaseFields(m, phase)
	m.Status.Phase = phase
	if withNode {
		m.Status.NodeRef = &v1alpha1.NodeReference{Kind: "Node", Name: name}
	}
	return m
}

// setPhaseFields sets the fields the machine controller records in phase
// (the phase itself is only their summary).
func setPhaseFields(m *v1alpha1.Machine, phase v1alpha1.MachinePhase) {
	cond := func(t string, s metav1.ConditionStatus, reason string) {
		meta.SetStatusCondition(&m.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason})
	}
	switch phase {
	case v1alpha1.PhaseFailed:
		m.Status.FailureReason = "HealthTimeout"
	case v1alpha1.PhaseCrashLoopBackOff:
		m.Status.LastOperation = v1alpha1.LastOperation{Type: v1alpha1.OperationCreate, State: v1alpha1.OperationFailed}
	case v1alpha1.PhaseUnknown:
		m.Status.UnhealthySince = &metav1.Time{}
	case v1alpha1.PhaseRunning:
		cond(v1alpha1.ReadyCondition, metav1.ConditionTrue, "Running")
	case v1alpha1.PhaseProvisioned:
		cond(v1alpha1.InfrastructureReadyCondition, metav1.ConditionTrue, "Provisioned")
	case v1alpha1.PhaseProvisioning:
		cond(v1alpha1.InfrastructureReadyCondition, metav1.ConditionFalse, "Creating")
	}
}

func namesOf(ms []*v1alpha1.Machine) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Name)
	}
	return out
}

func TestVictimOrder(t *testing.T) {
	running := v1alpha1.PhaseRunning
	cases := []struct {
		name     string
		machines []*v1alpha1.Machine
		policy   v1alpha1.MachineDeletePolicy
		want     []string
	}{
		{"the autoscaler's mark goes first, even before a Failed Machine",
			[]*v1alpha1.Machine{
				mach("failed", v1alpha1.PhaseFailed, time.Hour, nil, false),
				mach("marked", running, time.Hour, map[string]string{v1alpha1.DeleteMachineAnnotation: "yes"}, true),
			}, v1alpha1.DeletePolicyRandom, []string{"marked", "failed"}},
		{"lower priority first; default priority is 3 (MCM's example: priority 1 goes first)",
			[]*v1alpha1.Machine{
				mach("default", running, time.Hour, nil, true),
				mach("p1", running, time.Hour, map[string]string{v1alpha1.PriorityAnnotation: "1"}, true),
				mach("p5", running, time.Hour, map[string]string{v1alpha1.PriorityAnnotation: "5"}, true),
				mach("bad", running, time.Hour, map[string]string{v1alpha1.PriorityAnnotation: "high"}, true),
			}, v1alpha1.DeletePolicyOldest, []string{"p1", "bad", "default", "p5"}}, // an unparsable priority counts as 3; ties by name
		{"phase order: Failed, CrashLoopBackOff, Unknown, Pending, Provisioned, Running",
			[]*v1alpha1.Machine{
				mach("running", running, time.Hour, nil, true),
				mach("provisioned", v1alpha1.PhaseProvisioned, time.Hour, nil, false),
				mach("pending", v1alpha1.PhasePending, time.Hour, nil, false),
				mach("unknown", v1alpha1.PhaseUnknown, time.Hour, nil, true),
				mach("crash", v1alpha1.PhaseCrashLoopBackOff, time.Hour, nil, false),
				mach("failed", v1alpha1.PhaseFailed, time.Hour, nil, true),
			}, v1alpha1.DeletePolicyRandom, []string{"failed", "crash", "unknown", "pending", "provisioned", "running"}},
		{"the fields decide, not status.phase: a Machine that failed since its phase was written goes first",
			[]*v1alpha1.Machine{
				mach("a-running", running, time.Hour, nil, true),
				func() *v1alpha1.Machine {
					m := mach("b-failed-since", running, time.Hour, nil, true)
					m.Status.FailureReason = "HealthTimeout" // the phase still says Running
					return m
				}(),
			}, v1alpha1.DeletePolicyOldest, []string{"b-failed-since", "a-running"}},
		{"in one phase, Machines without a Node go first",
			[]*v1alpha1.Machine{
				mach("with-node", v1alpha1.PhaseUnknown, time.Hour, nil, true),
				mach("no-node", v1alpha1.PhaseUnknown, time.Minute, nil, false),
			}, v1alpha1.DeletePolicyOldest, []string{"no-node", "with-node"}},
		{"Oldest", []*v1alpha1.Machine{
			mach("young", running, time.Minute, nil, true),
			mach("old", running, time.Hour, nil, true),
			mach("middle", running, 10*time.Minute, nil, true),
		}, v1alpha1.DeletePolicyOldest, []string{"old", "middle", "young"}},
		{"Newest", []*v1alpha1.Machine{
			mach("young", running, time.Minute, nil, true),
			mach("old", running, time.Hour, nil, true),
			mach("middle", running, 10*time.Minute, nil, true),
		}, v1alpha1.DeletePolicyNewest, []string{"young", "middle", "old"}},
	}
	for _, tc := range cases {
		got := namesOf(victims(tc.machines, len(tc.machines), tc.policy, 0, time.Now(), nil))
		if len(got) != len(tc.want) {
			t.Fatalf("%s: got %v", tc.name, got)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: order %v; want %v", tc.name, got, tc.want)
				break
			}
		}
	}
}

func TestRandomPolicyIsStableAndTakesN(t *testing.T) {
	var ms []*v1alpha1.Machine
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		ms = append(ms, mach(n, v1alpha1.PhaseRunning, time.Hour, nil, true))
	}
	first := namesOf(victims(ms, 2, v1alpha1.DeletePolicyRandom, 0, time.Now(), nil))
	reversed := append([]*v1alpha1.Machine(nil), ms...)
	for i, j := 0, len(reversed)-1; i < j; i, j = i+1, j-1 {
		reversed[i], reversed[j] = reversed[j], reversed[i]
	}
	again := namesOf(victims(reversed, 2, v1alpha1.DeletePolicyRandom, 0, time.Now(), nil))
	if len(first) != 2 || first[0] != again[0] || first[1] != again[1] {
		t.Fatalf("Random picked %v, then %v from the same Machines", first, again)
	}
}

// A Running Machine not yet Ready for minReadySeconds goes before an
// available one, whatever the delete policy: the MachineDeployment's
// availability floor counts on a shrink taking unavailable Machines first.
func TestNotYetAvailableGoesBeforeAvailable(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	readySince := func(m *v1alpha1.Machine, ago time.Duration) *v1alpha1.Machine {
		meta.FindStatusCondition(m.Status.Conditions, v1alpha1.ReadyCondition).LastTransitionTime = metav1.NewTime(now.Add(-ago))
		return m
	}
	ms := []*v1alpha1.Machine{
		readySince(mach("old-available", v1alpha1.PhaseRunning, time.Hour, nil, true), time.Hour),
		readySince(mach("young-not-yet", v1alpha1.PhaseRunning, time.Minute, nil, true), 10*time.Second),
	}
	if got := namesOf(victims(ms, 1, v1alpha1.DeletePolicyOldest, time.Minute, now, nil)); got[0] != "young-not-yet" {
		t.Fatalf("with minReadySeconds 60 the first victim is %v; want the Machine Ready for only 10s", got)
	}
	if got := namesOf(victims(ms, 1, v1alpha1.DeletePolicyOldest, 0, now, nil)); got[0] != "old-available" {
		t.Fatalf("without minReadySeconds both are available and Oldest picks %v; want old-available", got)
	}
}

// BenchmarkVictims picks a wave of 500 of a 5000-Machine set, as an old
// set's scale-down does at every step of a rolling update at N=5000.
func BenchmarkVictims(b *testing.B) {
	ms := make([]*v1alpha1.Machine, 5000)
	for i := range ms {
		ms[i] = mach(fmt.Sprintf("m-%d", i), v1alpha1.PhaseRunning, time.Duration(i)*time.Second, nil, true)
	}
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		victims(ms, 500, v1alpha1.DeletePolicyRandom, 0, now, nil)
	}
}
