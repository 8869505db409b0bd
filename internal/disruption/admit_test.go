package disruption_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestAdmitStopsAtTheFirstHeldBack: of four victims under a budget with
// two disruptions left, a Machine already down goes free, two take the
// budget, and the fourth is held back — the only one marked waiting.
func TestAdmitStopsAtTheFirstHeldBack(t *testing.T) {
	ns := namespace(t)
	budgetOf(t, ns, "prod", "a", 3, 2)
	victims := []*v1alpha1.Machine{machine(t, ns, "down", "a", false)}
	for i := range 4 {
		victims = append(victims, machine(t, ns, fmt.Sprintf("m%d", i), "a", true))
	}
	granted, d, err := gate().Admit(ctx, victims, v1alpha1.DisruptionScaleDown)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range granted {
		names = append(names, m.Name)
	}
	if fmt.Sprint(names) != "[down m0 m1]" || d.Allowed || d.Message == "" {
		t.Fatalf("granted %v, decision %+v; want [down m0 m1] and m2 held back", names, d)
	}
	for _, m := range victims[3:] {
		c := meta.FindStatusCondition(getMachine(t, m).Status.Conditions, v1alpha1.DisruptionAllowedCondition)
		if waiting := c != nil; waiting != (m.Name == "m2") {
			t.Errorf("%s: condition %+v; only m2 should be marked waiting", m.Name, c)
		}
	}
}
