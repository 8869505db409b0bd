package machinedeployment_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
)

// threeZones is a sim providerSpec over three zones.
const threeZones = `{"region":"local","zones":["local-a","local-b","local-c"]}`

// zonedClass creates a sim class over three zones whose nodeTemplate
// lists them (zones nil: a class that lists none).
func (h *harness) zonedClass(name string, zones []string) {
	h.T.Helper()
	class := h.Class(name, threeZones)
	class.Spec.NodeTemplate = &v1alpha1.NodeTemplate{Region: "local", Zones: zones}
	if err := controllertest.Env.Client.Update(ctx, class); err != nil {
		h.T.Fatal(err)
	}
}

// clock is a settable offset over the real clock, the deployment
// controller's Now: a test moves it past a zone's next probe.
type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time      { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) add(d time.Duration) { c.offset.Add(int64(d)) }

// newClockHarness is newHarness with the deployment controller on clk.
func newClockHarness(t *testing.T, clk *clock) *harness {
	return &harness{controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			ms := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller")}
			if err := ms.SetupWithManager(ctx, mgr, 4); err != nil {
				return err
			}
			md := &machinedeployment.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
				Recorder: mgr.GetEventRecorder("machinedeployment-controller"), Now: clk.now}
			return md.SetupWithManager(ctx, mgr, 2)
		},
	})}
}

// spreadOver sets spec.failureDomains (zones nil: the class's).
func spreadOver(policy v1alpha1.SpreadPolicy, zones ...v1alpha1.FailureDomainZone) func(*v1alpha1.MachineDeployment) {
	return func(md *v1alpha1.MachineDeployment) {
		md.Spec.FailureDomains = &v1alpha1.FailureDomains{Zones: zones, Policy: policy}
	}
}

func zone(name string, weight ...int32) v1alpha1.FailureDomainZone {
	z := v1alpha1.FailureDomainZone{Name: name}
	if len(weight) > 0 {
		z.Weight = ptr.To(weight[0])
	}
	return z
}

// placement renders a set's spec.failureDomains for comparison.
func placement(ms *v1alpha1.MachineSet) string {
	p := ms.Spec.FailureDomains
	if p == nil {
		return "none"
	}
	var parts []string
	for _, z := range p.Zones {
		s := fmt.Sprintf("%s:%d", z.Name, z.Weight)
		if z.OutOfCapacity {
			s += ":out"
		}
		parts = append(parts, s)
	}
	return fmt.Sprintf("%s surge %d", strings.Join(parts, ","), p.RebalanceSurge)
}

// zoneStatus renders status.failureDomains as zone and share (the
// Machines counted are the MachineSet's placement's doing, tested there).
func zoneStatus(md *v1alpha1.MachineDeployment) string {
	var parts []string
	for _, z := range md.Status.FailureDomains {
		s := fmt.Sprintf("%s %d", z.Name, z.Target)
		if z.OutOfCapacitySince != nil {
			s += " out"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

// The deployment resolves its zones (here the class's) into its set's
// placement and its status; changing the zones or the policy rewrites the
// placement of the same set: no rollout.
func TestFailureDomainsResolvedIntoTheSets(t *testing.T) {
	h := newHarness(t)
	h.zonedClass("zoned", []string{"local-a", "local-b", "local-c"})
	h.deployment("web", 7, "zoned", func(md *v1alpha1.MachineDeployment) {
		md.Spec.Strategy = rolling("1", "0")
		spreadOver(v1alpha1.SpreadEven)(md)
	})
	wantPlacement := func(want, wantStatus string) string {
		var name string
		h.Eventually(30*time.Second, "placement "+want+" and status "+wantStatus, func() (bool, error) {
			sets := h.sets("web")
			if len(sets) != 1 {
				return false, nil
			}
			name = sets[0].Name
			return placement(&sets[0]) == want && zoneStatus(h.md("web")) == wantStatus, nil
		})
		return name
	}
	first := wantPlacement("local-a:1,local-b:1,local-c:1 surge 1", "local-a 3, local-b 2, local-c 2")
	h.waitComplete("web", 60*time.Second)

	h.update("web", spreadOver(v1alpha1.SpreadWeighted, zone("local-a", 2), zone("local-b")))
	if again := wantPlacement("local-a:2,local-b:1 surge 1", "local-a 5, local-b 2"); again != first {
		t.Fatalf("changing the zones made set %s beside %s: a rollout", again, first)
	}
	if sets := h.sets("web"); len(sets) != 1 {
		t.Fatalf("%d sets after changing the zones", len(sets))
	}
	// The autoscaler is told no zone for a group over two (docs/autoscaling.md),
	// the zone of a group in one.
	if l := h.md("web").Annotations[v1alpha1.AutoscalerCapacityLabels]; l != "topology.kubernetes.io/region=local" {
		t.Errorf("scale-from-zero labels of a deployment over two zones: %q", l)
	}
	h.update("web", spreadOver(v1alpha1.SpreadEven, zone("local-c")))
	wantPlacement("local-c:1 surge 1", "local-c 7")
	h.Eventually(30*time.Second, "the zone in the scale-from-zero labels", func() (bool, error) {
		return h.md("web").Annotations[v1alpha1.AutoscalerCapacityLabels] == "topology.kubernetes.io/region=local,topology.kubernetes.io/zone=local-c", nil
	})
	// Without spec.failureDomains the set places nothing and the status says nothing of zones.
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.FailureDomains = nil })
	wantPlacement("none", "")
	if c := h.condition("web", v1alpha1.SpreadCondition); c != nil {
		t.Errorf("Spread condition without failureDomains: %+v", c)
	}
}

// Zones no one can create in are reported, not placed: a zone the class
// does not list, or no zones anywhere.
func TestFailureDomainsInvalid(t *testing.T) {
	h := newHarness(t)
	h.zonedClass("zoned", []string{"local-a", "local-b", "local-c"})
	h.zonedClass("bare", nil)
	h.deployment("web", 1, "zoned", spreadOver(v1alpha1.SpreadEven, zone("local-a"), zone("local-z")))
	h.waitCondition("web", v1alpha1.SpreadCondition, metav1.ConditionFalse, v1alpha1.ZonesInvalidReason, 30*time.Second)
	msg := h.condition("web", v1alpha1.SpreadCondition).Message
	if !strings.Contains(msg, "local-z") || !strings.Contains(msg, "local-a, local-b, local-c") {
		t.Errorf("message %q does not name the zone and the class's zones", msg)
	}
	h.ExpectEvent(v1alpha1.ZonesInvalidReason, h.Prefix+"web")
	h.Eventually(30*time.Second, "the set without placement", func() (bool, error) {
		sets := h.sets("web")
		return len(sets) == 1 && sets[0].Spec.FailureDomains == nil, nil
	})

	h.deployment("bare", 1, "bare", spreadOver(v1alpha1.SpreadEven))
	h.waitCondition("bare", v1alpha1.SpreadCondition, metav1.ConditionFalse, v1alpha1.ZonesInvalidReason, 30*time.Second)
	if msg := h.condition("bare", v1alpha1.SpreadCondition).Message; !strings.Contains(msg, "lists none") {
		t.Errorf("message %q does not say the class lists no zones", msg)
	}
}

// A zone that refuses a create for capacity is marked out of capacity:
// status, condition, Event, and the sets place nothing there until its
// next probe; a VM created there after that brings it back. The template
// pins the Machines to the zone, so that the zone is tried whether or not
// the MachineSet places Machines itself (its placement is tested in its
// package): the assertions hold either way.
func TestZoneOutOfCapacityAndBack(t *testing.T) {
	// The controller's clock runs 10 s behind the API server's: a VM
	// created after the refusal is a later second than the refusal
	// recorded, however fast the test.
	clk := &clock{}
	clk.add(-10 * time.Second)
	h := newClockHarness(t, clk)
	h.zonedClass("zoned", []string{"local-a", "local-b", "local-c"})
	h.Sim.Cloud().SetZoneCapacity("local-b", true)
	h.deployment("web", 2, "zoned", func(md *v1alpha1.MachineDeployment) {
		md.Spec.Strategy = rolling("1", "0")
		md.Spec.Template.Spec.FailureDomain = "local-b"
		spreadOver(v1alpha1.SpreadEven, zone("local-a"), zone("local-b"))(md)
	})
	h.waitCondition("web", v1alpha1.SpreadCondition, metav1.ConditionFalse, v1alpha1.ZoneOutOfCapacityReason, 30*time.Second)
	h.ExpectEvent(v1alpha1.ZoneOutOfCapacityReason, h.Prefix+"web")
	md := h.md("web")
	b := md.Status.FailureDomains[1]
	if b.Name != "local-b" || b.OutOfCapacitySince == nil || b.NextProbe == nil || b.Target != 0 || md.Status.FailureDomains[0].Target != 2 ||
		b.NextProbe.Sub(b.OutOfCapacitySince.Time) != 30*time.Second {
		t.Fatalf("zone local-b status %+v", b)
	}
	if c := h.condition("web", v1alpha1.SpreadCondition); !strings.Contains(c.Message, "local-b") || !strings.Contains(c.Message, "next probe") {
		t.Errorf("condition message %q does not name the zone and the next probe", c.Message)
	}
	h.Eventually(30*time.Second, "local-b out of capacity in the set's placement", func() (bool, error) {
		sets := h.sets("web")
		return len(sets) == 1 && placement(&sets[0]) == "local-a:1,local-b:1:out surge 1", nil
	})

	// A restarted manager goes on from the status: the same record, no
	// new transition, 5 s later (a record made again would say so). The
	// spec change makes sure it reconciled since.
	h.StopManager()
	clk.add(5 * time.Second)
	h.StartManager()
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.MinReadySeconds = 1 })
	h.Eventually(30*time.Second, "the restarted manager's reconcile", func() (bool, error) {
		md := h.md("web")
		return md.Status.ObservedGeneration == md.Generation, nil
	})
	if again := h.md("web").Status.FailureDomains[1]; again.OutOfCapacitySince == nil || !again.OutOfCapacitySince.Equal(b.OutOfCapacitySince) ||
		!again.NextProbe.Equal(b.NextProbe) {
		t.Fatalf("after a restart local-b is %+v, was %+v", again, b)
	}

	// Past the next probe the zone is open again; the probe succeeds.
	clk.add(36 * time.Second)
	h.Sim.Cloud().SetZoneCapacity("local-b", false)
	h.update("web", func(md *v1alpha1.MachineDeployment) { md.Spec.Replicas = 3 })
	h.ExpectEvent("ZoneCapacityRestored", h.Prefix+"web")
	h.Eventually(30*time.Second, "local-b back in status and placement", func() (bool, error) {
		md := h.md("web")
		sets := h.sets("web")
		return md.Status.FailureDomains[1].OutOfCapacitySince == nil && len(sets) == 1 &&
			placement(&sets[0]) == "local-a:1,local-b:1 surge 1", nil
	})
	if c := h.condition("web", v1alpha1.SpreadCondition); c.Reason == v1alpha1.ZoneOutOfCapacityReason {
		t.Errorf("condition still %s: %s", c.Reason, c.Message)
	}
}
