package machinehealthcheck

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestBudget(t *testing.T) {
	pct := func(s string) *intstr.IntOrString { v := intstr.FromString(s); return &v }
	num := func(n int) *intstr.IntOrString { v := intstr.FromInt32(int32(n)); return &v }
	le := func(v *intstr.IntOrString) *v1alpha1.MachineHealthCheckTriggerIf {
		return &v1alpha1.MachineHealthCheckTriggerIf{UnhealthyLessThanOrEqualTo: v}
	}
	in := func(r string) *v1alpha1.MachineHealthCheckTriggerIf {
		return &v1alpha1.MachineHealthCheckTriggerIf{UnhealthyInRange: r}
	}
	for _, tc := range []struct {
		name                                   string
		rem                                    v1alpha1.MachineHealthCheckRemediation
		expected, unhealthy, failing, inFlight int
		heldBack                               bool
		start, allowed                         int
	}{
		{"no limits", v1alpha1.MachineHealthCheckRemediation{}, 5, 2, 0, 0, false, maxInt, 3},
		{"40% of 5 is 2: 5 unhealthy held back", v1alpha1.MachineHealthCheckRemediation{TriggerIf: le(pct("40%"))}, 5, 5, 0, 0, true, 0, 0},
		{"40% of 5 is 2: 2 unhealthy go", v1alpha1.MachineHealthCheckRemediation{TriggerIf: le(pct("40%"))}, 5, 2, 0, 0, false, maxInt, 0},
		{"a number", v1alpha1.MachineHealthCheckRemediation{TriggerIf: le(num(3))}, 10, 1, 0, 0, false, maxInt, 2},
		{"in range", v1alpha1.MachineHealthCheckRemediation{TriggerIf: in("[3-5]")}, 10, 4, 0, 0, false, maxInt, 1},
		{"below the range", v1alpha1.MachineHealthCheckRemediation{TriggerIf: in("[3-5]")}, 10, 2, 0, 0, true, 0, 0},
		{"above the range", v1alpha1.MachineHealthCheckRemediation{TriggerIf: in("[3-5]")}, 10, 6, 0, 0, true, 0, 0},
		{"maxInFlight left", v1alpha1.MachineHealthCheckRemediation{MaxInFlight: num(2)}, 10, 4, 0, 1, false, 1, 1},
		{"maxInFlight percent rounds up", v1alpha1.MachineHealthCheckRemediation{MaxInFlight: pct("25%")}, 5, 4, 0, 0, false, 2, 1},
		{"failing Machines count: 1 unhealthy and 2 failing of 5 held back", v1alpha1.MachineHealthCheckRemediation{TriggerIf: le(pct("40%"))}, 5, 1, 2, 0, true, 0, 0},
		{"failing Machines count: 1 unhealthy and 1 failing of 5 go", v1alpha1.MachineHealthCheckRemediation{TriggerIf: le(pct("40%"))}, 5, 1, 1, 0, false, maxInt, 0},
		{"failing Machines are not healthy", v1alpha1.MachineHealthCheckRemediation{}, 5, 1, 2, 0, false, maxInt, 2},
		{"maxInFlight used up", v1alpha1.MachineHealthCheckRemediation{MaxInFlight: num(1)}, 10, 4, 0, 3, false, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := computeBudget(&tc.rem, tc.expected, tc.unhealthy, tc.failing, tc.inFlight)
			if err != nil {
				t.Fatal(err)
			}
			if b.heldBack != tc.heldBack || b.start != tc.start || b.allowed != tc.allowed {
				t.Errorf("budget = %+v; want heldBack %v, start %d, allowed %d", b, tc.heldBack, tc.start, tc.allowed)
			}
		})
	}
	held, err := computeBudget(&v1alpha1.MachineHealthCheckRemediation{TriggerIf: le(pct("40%"))}, 5, 1, 2, 0)
	if want := "3 of 5 Machines are unhealthy (2 failing a check whose timeout runs), more than"; err != nil || !strings.HasPrefix(held.why, want) {
		t.Errorf("held back because %q (%v); want it to start %q", held.why, err, want)
	}
	if _, err := computeBudget(&v1alpha1.MachineHealthCheckRemediation{TriggerIf: in("[5-3]")}, 5, 1, 0, 0); err == nil {
		t.Error("an upside-down range written around admission was accepted")
	}
}

// TestRemediableSparesAnInPlaceUpdate: a Machine drained and rebooting for
// its in-place update is not remediated while the update lasts (its
// updateTimeout bounds it); once the update stopped, or for a status left
// from a cleared target, it is.
func TestRemediableSparesAnInPlaceUpdate(t *testing.T) {
	machine := func(phase v1alpha1.InPlaceUpdatePhase, annotated bool) *v1alpha1.Machine {
		m := &v1alpha1.Machine{Status: v1alpha1.MachineStatus{InPlaceUpdate: &v1alpha1.InPlaceUpdateStatus{TargetSet: "new", Phase: phase}}}
		if annotated {
			m.Annotations = map[string]string{v1alpha1.InPlaceTargetAnnotation: "new"}
		}
		return m
	}
	for _, tc := range []struct {
		phase     v1alpha1.InPlaceUpdatePhase
		annotated bool
		want      bool
	}{
		{v1alpha1.InPlaceDraining, true, false},
		{v1alpha1.InPlaceUpdating, true, false},
		{v1alpha1.InPlaceWaitingForNode, true, false},
		{v1alpha1.InPlaceFailed, true, true},
		{v1alpha1.InPlaceSucceeded, true, true},
		{v1alpha1.InPlaceWaitingForNode, false, true},
	} {
		why, ok := remediable(machine(tc.phase, tc.annotated))
		if ok != tc.want {
			t.Errorf("%s (annotated %v): remediable = %v (%q), want %v", tc.phase, tc.annotated, ok, why, tc.want)
		}
	}
}
