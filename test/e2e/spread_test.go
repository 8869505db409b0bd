package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/sim"
)

// zonedSpec is a sim providerSpec over three zones.
const zonedSpec = `{"region":"local","zones":["local-a","local-b","local-c"],"bootDelay":"1s","bootJitter":"1s"}`

// spreadZones are the zones of zonedSpec.
var spreadZones = []string{"local-a", "local-b", "local-c"}

// TestZoneOutOfCapacity proves the failure domains of issue 17 on a real
// control plane (docs/failure-domains.md): a deployment spread evenly
// over three zones scales 3 → 12 with zone local-b refusing creates from
// the middle of the scale-up on. The Machines local-b refuses move to
// local-a and local-c, with a ZoneOutOfCapacity Event and condition; once
// local-b has capacity again its probe succeeds (ZoneCapacityRestored) and
// Machines move back until every zone is within one of its share. At
// every observed state every Machine is placed in one of the zones and
// every Node's zone label is its Machine's zone; no Machine gets two VMs,
// no Node goes before its drain.
func TestZoneOutOfCapacity(t *testing.T) {
	s := newScenario(t, "spread")
	s.startManager()
	rec := s.record(placedInZones(spreadZones))
	s.createZonedClass("zoned", zonedSpec, spreadZones)
	// Spread from its first Machine: created empty, then spread and scaled
	// in one update.
	s.createDeployment(0, "zoned", 1, 0)
	s.updateDeployment(func(md *v1alpha1.MachineDeployment) {
		md.Spec.FailureDomains = &v1alpha1.FailureDomains{Policy: v1alpha1.SpreadEven}
		md.Spec.Replicas = 3
	})
	s.waitSpread(3, map[string]int{"local-a": 1, "local-b": 1, "local-c": 1}, 3*time.Minute)

	// Halfway: 6 Machines, 2 a zone, then local-b runs out.
	s.scale(6)
	s.waitSpread(6, map[string]int{"local-a": 2, "local-b": 2, "local-c": 2}, 3*time.Minute)
	s.setZoneCapacity("local-b", false)
	s.scale(12)
	s.waitEvent(s.ns, v1alpha1.ZoneOutOfCapacityReason, "local-b")
	s.waitSpreadCondition(metav1.ConditionFalse, v1alpha1.ZoneOutOfCapacityReason, "local-b")
	// Nothing new in local-b, and its two running Machines stay (no
	// rebalance while a zone is out); the rest even over local-a and
	// local-c.
	s.waitSpread(12, map[string]int{"local-a": 5, "local-b": 2, "local-c": 5}, 4*time.Minute)
	if st := s.zoneStatus("local-b"); st.OutOfCapacitySince == nil || st.NextProbe == nil || st.Target != 0 {
		t.Errorf("status of local-b while out of capacity: %+v", st)
	}

	// local-b is back: the next probe (30 s after the refusal at most)
	// succeeds, and the spread moves Machines back.
	s.setZoneCapacity("local-b", true)
	s.waitEvent(s.ns, "ZoneCapacityRestored", "local-b")
	s.waitSpread(12, map[string]int{"local-a": 4, "local-b": 4, "local-c": 4}, 5*time.Minute)
	s.waitSpreadCondition(metav1.ConditionTrue, v1alpha1.SpreadBalancedReason, "")

	rec.verify()
	s.checkNoDuplicateVMs()
}

// createZonedClass creates a sim class over zones whose nodeTemplate
// lists them: the zones a deployment without its own spreads over.
func (s *scenario) createZonedClass(name, providerSpec string, zones []string) {
	s.t.Helper()
	s.createClass(name, providerSpec)
	s.eventually(30*time.Second, "the class's zones", func() (bool, error) {
		class := &v1alpha1.MachineClass{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, class); err != nil {
			return false, err
		}
		class.Spec.NodeTemplate.Zones = zones
		err := k8s.Update(context.Background(), class)
		return err == nil, err
	})
}

// setZoneCapacity makes a zone of the sim out of capacity or gives it
// capacity back (the sim's admin API).
func (s *scenario) setZoneCapacity(zone string, capacity bool) {
	s.t.Helper()
	what := "out-of-capacity"
	if capacity {
		what = "capacity"
	}
	var out sim.ZonesOutOfCapacity
	s.simPost("/zones/"+zone+"/"+what, nil, &out)
	s.t.Logf("%s: zones out of capacity %v", s.ns, out.Zones)
}

// waitSpread waits until the fleet is replicas Running Machines (each
// with a Ready Node and the sim holding exactly their VMs) placed as want
// says, zone by zone.
func (s *scenario) waitSpread(replicas int, want map[string]int, bound time.Duration) {
	s.t.Helper()
	s.waitSpreadWhere(replicas, fmt.Sprint(want), func(got map[string]int) bool {
		for z, n := range want {
			if got[z] != n {
				return false
			}
		}
		return true
	}, bound)
}

// waitSpreadWhere is waitSpread with the spread (Machines by zone)
// judged by ok.
func (s *scenario) waitSpreadWhere(replicas int, what string, ok func(map[string]int) bool, bound time.Duration) {
	s.t.Helper()
	s.eventually(bound, fmt.Sprintf("fleet of %d Running Machines spread %s", replicas, what), func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		if ok, err := s.fleetIs(ms, replicas, "zoned"); !ok {
			return false, err
		}
		got := map[string]int{}
		for _, m := range ms {
			got[m.Spec.FailureDomain]++
		}
		return ok(got), fmt.Errorf("spread %v", got)
	})
}

// waitSpreadCondition waits for the deployment's Spread condition.
func (s *scenario) waitSpreadCondition(status metav1.ConditionStatus, reason, text string) {
	s.t.Helper()
	s.eventually(time.Minute, fmt.Sprintf("Spread %s/%s saying %q", status, reason, text), func() (bool, error) {
		md := s.deployment()
		c := meta.FindStatusCondition(md.Status.Conditions, v1alpha1.SpreadCondition)
		if c == nil {
			return false, fmt.Errorf("no Spread condition")
		}
		return c.Status == status && c.Reason == reason && strings.Contains(c.Message, text), fmt.Errorf("%s/%s: %s", c.Status, c.Reason, c.Message)
	})
}

// zoneStatus is the deployment's status of one zone.
func (s *scenario) zoneStatus(zone string) v1alpha1.FailureDomainStatus {
	for _, z := range s.deployment().Status.FailureDomains {
		if z.Name == zone {
			return z
		}
	}
	return v1alpha1.FailureDomainStatus{}
}

// placedInZones is the invariant of a spread: every Machine is placed in
// one of zones, and the Node of a placed Machine is labelled with its zone
// (once Millwright synced it: the kubelet may register it without).
func placedInZones(zones []string) check {
	return func(r *recorder) string {
		nodes := r.objs[kindNode]
		for _, m := range r.machinesLocked() {
			z := m.Spec.FailureDomain
			if !slices.Contains(zones, z) {
				return fmt.Sprintf("Machine %s is placed in %q, not one of %v", m.Name, z, zones)
			}
			n, ok := nodes[nodeOf(m)].(*corev1.Node)
			if !ok || n.Annotations[v1alpha1.NodeLastAppliedTemplateAnnotation] == "" {
				continue
			}
			if got := n.Labels[corev1.LabelTopologyZone]; got != z {
				return fmt.Sprintf("Node %s of Machine %s in %s is labelled zone %q", n.Name, m.Name, z, got)
			}
		}
		return ""
	}
}
