package safety

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestMachineCountsFollowTheEvents applies drawn creates, updates and
// deletes to machineCounts, the clock moving on, and after each compares
// every set's kept count with the count of every Machine as it is then
// (countMachines' rule: counts): the Machines counted and the newest creation
// within the period.
func TestMachineCountsFollowTheEvents(t *testing.T) {
	rng := rand.New(rand.NewSource(35))
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := newMachineCounts(time.Minute, func() time.Time { return now })
	draw := func(name string) *v1alpha1.Machine {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			CreationTimestamp: metav1.NewTime(now.Add(-time.Duration(rng.Intn(90)) * time.Second))}}
		if set := []string{"", "a", "b", "b"}[rng.Intn(4)]; set != "" {
			yes := true
			m.OwnerReferences = []metav1.OwnerReference{{Kind: "MachineSet", Name: set, UID: types.UID(set), Controller: &yes}}
		}
		if rng.Intn(5) == 0 {
			m.DeletionTimestamp = &metav1.Time{Time: now}
		}
		if rng.Intn(5) == 0 {
			m.Annotations = map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveNow}
		}
		return m
	}
	machines := map[string]*v1alpha1.Machine{}
	for step := 0; step < 20000; step++ {
		now = now.Add(time.Duration(rng.Intn(3000)) * time.Millisecond)
		name := fmt.Sprint("m", rng.Intn(12))
		old := machines[name]
		switch {
		case old != nil && rng.Intn(4) == 0:
			c.sets.Apply(old, nil)
			delete(machines, name)
		case old != nil:
			m := draw(name)
			m.CreationTimestamp = old.CreationTimestamp // fixed at creation
			c.sets.Apply(old, m)
			machines[name] = m
		default:
			m := draw(name)
			c.sets.Apply(nil, m)
			machines[name] = m
		}
		for _, set := range []types.UID{"a", "b"} {
			var want, got groupCount
			for _, m := range machines {
				if ref := metav1.GetControllerOfNoCopy(m); ref != nil && ref.UID == set && counts(m) {
					want.machines++
					if created := m.CreationTimestamp.Time; now.Sub(created) < c.period && created.After(want.newest) {
						want.newest = created
					}
				}
			}
			c.add(set, &got)
			if got != want {
				t.Fatalf("step %d, set %s: kept %+v, counted %+v", step, set, got, want)
			}
		}
	}
}
