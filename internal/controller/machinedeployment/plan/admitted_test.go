package plan

import (
	"slices"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestAdmittedStartsOnlyTheGranted: maxUnavailable 3 starts all three
// Machines; with only the first admitted (the budget granted one), the
// plan starts it alone, and no step — set list or target — names the
// others: a start the budget refused is not half written.
func TestAdmittedStartsOnlyTheGranted(t *testing.T) {
	now := time.Now()
	in := func(admitted map[string]bool) Input {
		old := Set{Name: "v1", Revision: 1, Spec: 3, Counts: Counts{Machines: 3, Available: 3}}
		for i, n := range []string{"m1", "m2", "m3"} {
			old.Members = append(old.Members, Machine{Name: n, Created: now.Add(time.Duration(i) * time.Second), Available: true})
		}
		return Input{Strategy: v1alpha1.InPlaceStrategy, Replicas: 3, StatusReplicas: 3,
			Old: []Set{old}, New: &Set{Name: "v2", Revision: 2},
			InPlace: &InPlaceSettings{MaxUnavailable: 3, Admitted: admitted}}
	}
	if got := Plan(in(nil)).InPlace.Started; !slices.Equal(got, []string{"m1", "m2", "m3"}) {
		t.Fatalf("without admission: started %v, want all three", got)
	}
	p := Plan(in(map[string]bool{"m1": true}))
	if got := p.InPlace.Started; !slices.Equal(got, []string{"m1"}) {
		t.Fatalf("m1 admitted: started %v, want [m1]", got)
	}
	for _, st := range p.Steps {
		named := append(append([]string{st.Machine}, st.MovingOut...), st.MovingIn...)
		if slices.Contains(named, "m2") || slices.Contains(named, "m3") {
			t.Errorf("step %+v names a Machine the budget did not admit", st)
		}
	}
	if p := Plan(in(map[string]bool{})); len(p.InPlace.Started) != 0 || len(p.Steps) != 0 {
		t.Errorf("none admitted: started %v, steps %+v; want none", p.InPlace.Started, p.Steps)
	}
}
