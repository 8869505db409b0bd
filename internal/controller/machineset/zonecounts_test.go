package machineset

import (
	"fmt"
	"maps"
	"math/rand"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestZoneCountsFollowTheEvents applies drawn creates, updates and
// deletes (a Machine moving between sets and zones, turning deleted,
// failed or preserved) and compares after each every set's kept counts
// with a count of every Machine.
func TestZoneCountsFollowTheEvents(t *testing.T) {
	rng := rand.New(rand.NewSource(35))
	c := newZoneCounts()
	draw := func(name string) *v1alpha1.Machine {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
		m.Spec.FailureDomain = []string{"", "z1", "z2", "z3"}[rng.Intn(4)]
		if set := []string{"", "a", "b", "b"}[rng.Intn(4)]; set != "" {
			yes := true
			kind := "MachineSet"
			if rng.Intn(10) == 0 {
				kind = "Other"
			}
			m.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: set, UID: types.UID(set), Controller: &yes}}
		}
		switch rng.Intn(8) {
		case 0:
			m.DeletionTimestamp = &metav1.Time{Time: time.Date(2026, 12, 4, 0, 0, 0, 0, time.UTC)}
		case 1:
			m.Annotations = map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveNow}
		case 2:
			m.Status.FailureReason = "CreateFailed"
		}
		return m
	}
	machines := map[string]*v1alpha1.Machine{}
	for step := range 20000 {
		name := fmt.Sprint("m", rng.Intn(12))
		switch old := machines[name]; {
		case old != nil && rng.Intn(4) == 0:
			c.Apply(old, nil)
			delete(machines, name)
		default:
			m := draw(name)
			c.Apply(old, m)
			machines[name] = m
		}
		for _, set := range []types.UID{"a", "b"} {
			want := map[string]int32{}
			for _, m := range machines {
				if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.Kind == "MachineSet" && ref.UID == set && counted(m) {
					want[m.Spec.FailureDomain]++
				}
			}
			var got map[string]int32
			c.Read(set, func(zones map[string]int32) { got = maps.Clone(zones) })
			if !maps.Equal(got, want) {
				t.Fatalf("step %d, set %s: kept %v, counted %v", step, set, got, want)
			}
		}
	}
}
