package machineset_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// threeZoneSim is a sim class over the three zones the tests place in.
const threeZoneSim = `{"region":"local","zones":["local-a","local-b","local-c"]}`

// placement spreads a set evenly over local-a, local-b and local-c; the
// zones named in out are out of capacity.
func placement(surge int32, out ...string) *v1alpha1.FailureDomainPlacement {
	p := &v1alpha1.FailureDomainPlacement{RebalanceSurge: surge}
	for _, z := range []string{"local-a", "local-b", "local-c"} {
		p.Zones = append(p.Zones, v1alpha1.PlacementZone{Name: z, Weight: 1, OutOfCapacity: strings.Contains(strings.Join(out, ","), z)})
	}
	return p
}

func setPlacement(h *controllertest.Harness, name string, p *v1alpha1.FailureDomainPlacement) {
	h.T.Helper()
	ms := getSet(h, name)
	patch := client.MergeFrom(ms.DeepCopy())
	ms.Spec.FailureDomains = p
	if err := controllertest.Env.Client.Patch(context.Background(), ms, patch); err != nil {
		h.T.Fatal(err)
	}
}

// liveByZone counts the set's Machines not being deleted by zone, as
// "local-a=3 local-b=2 local-c=2".
func liveByZone(h *controllertest.Harness, set string) string {
	h.T.Helper()
	counts := map[string]int{}
	for _, m := range machinesOf(h, set) {
		if m.DeletionTimestamp.IsZero() {
			counts[m.Spec.FailureDomain]++
		}
	}
	var parts []string
	for z, n := range counts {
		parts = append(parts, fmt.Sprintf("%s=%d", z, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// A set over three zones places 7 Machines 3/2/2, and scaled to 4 removes
// from the most crowded zones first: 2/1/1.
func TestFailureDomainsPlaceAndScaleDown(t *testing.T) {
	h := newHarness(t)
	h.Class("small", threeZoneSim)
	set(h, "pool", 7, "small", func(ms *v1alpha1.MachineSet) { ms.Spec.FailureDomains = placement(0) })
	waitReady(h, "pool", 7, 90*time.Second)
	if got, want := liveByZone(h, "pool"), "local-a=3 local-b=2 local-c=2"; got != want {
		t.Fatalf("7 Machines placed %s, want %s", got, want)
	}
	scaleTo(h, "pool", 4)
	h.Eventually(60*time.Second, "the scale-down to 4", func() (bool, error) { return len(machinesOf(h, "pool")) == 4, nil })
	if got, want := liveByZone(h, "pool"), "local-a=2 local-b=1 local-c=1"; got != want {
		t.Fatalf("scaled down to %s, want %s: the most crowded zone loses a Machine first", got, want)
	}
}

// A new set of a deployment counts the Machines of the deployment's other
// sets: next to an old set's 3 Machines in local-a it places nothing
// there.
func TestFailureDomainsCountTheWholeDeployment(t *testing.T) {
	h := newHarness(t)
	h.Class("small", threeZoneSim)
	owner := metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineDeployment", Name: "md",
		UID: types.UID("md-" + h.NS), Controller: ptr.To(true)}
	ofDeployment := func(p *v1alpha1.FailureDomainPlacement) func(*v1alpha1.MachineSet) {
		return func(ms *v1alpha1.MachineSet) {
			ms.Labels = map[string]string{v1alpha1.MachineDeploymentNameLabel: "md"}
			ms.OwnerReferences = []metav1.OwnerReference{owner}
			ms.Spec.FailureDomains = p
		}
	}
	onlyA := &v1alpha1.FailureDomainPlacement{Zones: []v1alpha1.PlacementZone{{Name: "local-a", Weight: 1}}}
	set(h, "old", 3, "small", ofDeployment(onlyA))
	h.Eventually(60*time.Second, "the old set's Machines", func() (bool, error) { return len(machinesOf(h, "old")) == 3, nil })
	set(h, "new", 3, "small", ofDeployment(placement(0)))
	h.Eventually(60*time.Second, "the new set's Machines", func() (bool, error) { return len(machinesOf(h, "new")) == 3, nil })
	// Deployment-wide: a 3 (old), then b, c, b — exact shares of 4, 5, 6.
	if got, want := liveByZone(h, "new"), "local-b=2 local-c=1"; got != want {
		t.Fatalf("the new set placed %s, want %s: it must count the old set's Machines in local-a", got, want)
	}
}

// outOfCapacitySim refuses every create for capacity, whatever the zone.
const outOfCapacitySim = `{"region":"local","zones":["local-a","local-b","local-c"],"faults":{"outOfCapacityZones":["local-a","local-b","local-c"]}}`

// A Machine waiting for a VM in a zone its deployment found out of
// capacity (its create refused ResourceExhausted, no VM) is replaced in
// another zone, with a MovedFromZone Event. (A class that never made a
// Machine creates one at a time, so one replica: placed in local-b, listed
// first.)
func TestFailureDomainsMoveOutOfAZoneOutOfCapacity(t *testing.T) {
	h := newHarness(t)
	h.Class("full", outOfCapacitySim)
	bFirst := func(out ...string) *v1alpha1.FailureDomainPlacement {
		p := placement(0, out...)
		p.Zones[0], p.Zones[1] = p.Zones[1], p.Zones[0]
		return p
	}
	set(h, "pool", 1, "full", func(ms *v1alpha1.MachineSet) { ms.Spec.FailureDomains = bFirst() })
	var refused string
	h.Eventually(60*time.Second, "the create in local-b refused for capacity", func() (bool, error) {
		for _, m := range machinesOf(h, "pool") {
			op := m.Status.LastOperation
			if m.Spec.FailureDomain == "local-b" && op.Type == v1alpha1.OperationCreate && op.State == v1alpha1.OperationFailed && op.ErrorCode == "ResourceExhausted" {
				refused = m.Name
			}
		}
		return refused != "", nil
	})
	setPlacement(h, "pool", bFirst("local-b"))
	h.Eventually(60*time.Second, "the Machine in local-b replaced in local-a", func() (bool, error) {
		return liveByZone(h, "pool") == "local-a=1" && findMachine(h, "pool", refused) == nil, nil
	})
	h.ExpectEvent("MovedFromZone", "pool")
}

func findMachine(h *controllertest.Harness, set, name string) *v1alpha1.Machine {
	for _, m := range machinesOf(h, set) {
		if m.Name == name {
			return &m
		}
	}
	return nil
}

// A zone back from out of capacity gets its share back through the
// rebalance surge: one extra Machine at a time in the zone furthest below
// its share, then the scale-down removes one from the zone furthest
// above; never more than spec.replicas + 1 Machines.
func TestFailureDomainsRebalanceSurge(t *testing.T) {
	h := newHarness(t)
	h.Class("small", threeZoneSim)
	w := watchMachines(h)
	var mu sync.Mutex
	most := 0
	go countMost(w, &mu, &most)
	set(h, "pool", 6, "small", func(ms *v1alpha1.MachineSet) { ms.Spec.FailureDomains = placement(1, "local-b") })
	waitReady(h, "pool", 6, 90*time.Second)
	if got, want := liveByZone(h, "pool"), "local-a=3 local-c=3"; got != want {
		t.Fatalf("with local-b out of capacity 6 Machines placed %s, want %s", got, want)
	}
	setPlacement(h, "pool", placement(1))
	h.Eventually(120*time.Second, "the zones rebalanced", func() (bool, error) {
		ms := getSet(h, "pool")
		return liveByZone(h, "pool") == "local-a=2 local-b=2 local-c=2" && len(machinesOf(h, "pool")) == 6 &&
			ms.Status.AvailableReplicas == 6, nil
	})
	mu.Lock()
	defer mu.Unlock()
	if most > 7 {
		t.Errorf("%d Machines at once; want at most spec.replicas + rebalanceSurge = 7", most)
	}
}

// countMost records the most Machine objects seen at once by w.
func countMost(w watch.Interface, mu *sync.Mutex, most *int) {
	seen := map[string]bool{}
	for ev := range w.ResultChan() {
		m, ok := ev.Object.(*v1alpha1.Machine)
		if !ok {
			continue
		}
		mu.Lock()
		switch ev.Type {
		case watch.Added, watch.Modified:
			seen[m.Name] = true
		case watch.Deleted:
			delete(seen, m.Name)
		}
		*most = max(*most, len(seen))
		mu.Unlock()
	}
}
