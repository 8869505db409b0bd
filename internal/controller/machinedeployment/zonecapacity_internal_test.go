package machinedeployment

import (
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

func TestProbeBackoffDoublesUpToTenMinutes(t *testing.T) {
	want := []time.Duration{30 * time.Second, time.Minute, 2 * time.Minute, 4 * time.Minute, 8 * time.Minute, 10 * time.Minute, 10 * time.Minute}
	for failed, w := range want {
		if got := probeBackoff(int32(failed)); got != w {
			t.Errorf("probeBackoff(%d) = %s, want %s", failed, got, w)
		}
	}
	if got := probeBackoff(1 << 30); got != probeBackoffMax {
		t.Errorf("probeBackoff(huge) = %s", got)
	}
}

// A zone's capacity record through a refusal, a refused probe and a
// successful one, as followCapacity moves it from the Machines' evidence.
func TestFollowCapacity(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	s := &scope{r: &Reconciler{}, now: t0, spread: &spreadState{}}
	// events returns the reasons of the Events queued since the last call.
	events := func() []string {
		var out []string
		for _, e := range s.spread.events {
			out = append(out, e.reason)
		}
		s.spread.events = nil
		return out
	}
	zs := &v1alpha1.FailureDomainStatus{Name: "b"}
	at := func(d time.Duration) time.Time { return t0.Add(d) }

	// An old Machine with a VM and no refusal: nothing happens.
	s.followCapacity(zs, &zoneEvidence{created: at(-time.Hour), createdBy: "old"})
	if zs.OutOfCapacitySince != nil {
		t.Fatalf("out of capacity without a refusal: %+v", zs)
	}
	// A refusal newer than the newest VM: out, first probe in 30 s.
	ev := &zoneEvidence{created: at(-time.Hour), createdBy: "old", refused: t0, refusedBy: "m1"}
	s.followCapacity(zs, ev)
	if zs.OutOfCapacitySince == nil || !zs.NextProbe.Time.Equal(at(30*time.Second)) || zs.FailedProbes != 0 {
		t.Fatalf("after the refusal: %+v", zs)
	}
	if e := events(); len(e) != 1 || e[0] != "ZoneOutOfCapacity" {
		t.Fatalf("Events after the refusal: %v", e)
	}
	// Before the probe the same evidence changes nothing.
	s.now = at(10 * time.Second)
	s.followCapacity(zs, ev)
	if !zs.NextProbe.Time.Equal(at(30*time.Second)) || zs.FailedProbes != 0 {
		t.Fatalf("before the probe: %+v", zs)
	}
	// At the probe, the old refusal is not the probe's: still probing.
	s.now = at(31 * time.Second)
	s.followCapacity(zs, ev)
	if !zs.NextProbe.Time.Equal(at(30*time.Second)) || zs.FailedProbes != 0 {
		t.Fatalf("probing, nothing refused yet: %+v", zs)
	}
	// The probe is refused: the next one twice as late.
	ev.refused, ev.refusedBy = at(32*time.Second), "probe-1"
	s.now = at(32 * time.Second)
	s.followCapacity(zs, ev)
	if zs.FailedProbes != 1 || !zs.NextProbe.Time.Equal(at(32*time.Second+time.Minute)) || !zs.OutOfCapacitySince.Time.Equal(t0) {
		t.Fatalf("after a refused probe: %+v", zs)
	}
	if e := events(); len(e) != 0 {
		t.Fatalf("Events while out of capacity: %v (one per transition)", e)
	}
	// A VM created in the zone after it went out: back.
	ev.created, ev.createdBy = at(2*time.Minute), "probe-2"
	s.now = at(2 * time.Minute)
	s.followCapacity(zs, ev)
	if zs.OutOfCapacitySince != nil || zs.NextProbe != nil || zs.FailedProbes != 0 {
		t.Fatalf("after a successful create: %+v", zs)
	}
	if e := events(); len(e) != 1 || e[0] != "ZoneCapacityRestored" {
		t.Fatalf("Events once back: %v", e)
	}
	// The refusals older than that success do not take it out again.
	s.now = at(3 * time.Minute)
	s.followCapacity(zs, ev)
	if zs.OutOfCapacitySince != nil {
		t.Fatalf("an old refusal took the zone out again: %+v", zs)
	}
}
