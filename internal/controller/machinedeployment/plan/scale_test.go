package plan

import (
	"maps"
	"testing"
	"time"
)

var (
	t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 = t0.Add(time.Hour)
	t2 = t1.Add(time.Hour)
)

// sv is a set last sized when the deployment had budget maxReplicas.
func sv(name string, rev int64, created time.Time, spec, maxReplicas int32) Set {
	return Set{Name: name, Revision: rev, Created: created, Spec: spec, MaxReplicas: maxReplicas, Desired: maxReplicas, HasDesired: true,
		Counts: Counts{Machines: spec, Available: spec, Left: spec}}
}

// scaleCase is a scaling event: the new set is named newSet ("" none).
type scaleCase struct {
	Replicas, MaxSurge, StatusReplicas int32
	Paused                             bool
	NewSet                             string
	Sets                               []Set
}

func (c scaleCase) input() Input {
	in := Input{Replicas: c.Replicas, MaxSurge: c.MaxSurge, StatusReplicas: c.StatusReplicas, Paused: c.Paused}
	for _, s := range c.Sets {
		if s.Name == c.NewSet {
			in.New = &s
		} else {
			in.Old = append(in.Old, s)
		}
	}
	return in
}

func TestScale(t *testing.T) {
	tests := []struct {
		name string
		in   scaleCase
		want map[string]int32
	}{
		// Kubernetes' own cases (sync_test.go TestScale), maxSurge 0.
		{"one set: 10 -> 12", scaleCase{Replicas: 12, NewSet: "v1", Sets: []Set{sv("v1", 1, t2, 10, 10)}},
			map[string]int32{"v1": 12}},
		{"one set: 10 -> 5", scaleCase{Replicas: 5, NewSet: "v1", Sets: []Set{sv("v1", 1, t2, 10, 10)}},
			map[string]int32{"v1": 5}},
		{"proportional: 5 -> 3", scaleCase{Replicas: 3, NewSet: "v2",
			Sets: []Set{sv("v2", 2, t2, 2, 5), sv("v1", 1, t1, 3, 5)}},
			map[string]int32{"v2": 1, "v1": 2}},
		{"proportional: 9 -> 4", scaleCase{Replicas: 4, NewSet: "v2",
			Sets: []Set{sv("v2", 2, t2, 8, 9), sv("v1", 1, t1, 1, 9)}},
			map[string]int32{"v2": 4, "v1": 0}},
		{"proportional: 13 -> 8", scaleCase{Replicas: 8, NewSet: "v3",
			Sets: []Set{sv("v3", 3, t2, 2, 13), sv("v2", 2, t1, 8, 13), sv("v1", 1, t0, 3, 13)}},
			map[string]int32{"v3": 1, "v2": 5, "v1": 2}},
		{"leftover from the older of equal sets: 3 -> 2", scaleCase{Replicas: 2, NewSet: "v3",
			Sets: []Set{sv("v3", 3, t2, 1, 3), sv("v2", 2, t1, 1, 3), sv("v1", 1, t0, 1, 3)}},
			map[string]int32{"v1": 0}},
		{"to zero: 6 -> 0", scaleCase{Replicas: 0, NewSet: "v3",
			Sets: []Set{sv("v3", 3, t2, 3, 6), sv("v2", 2, t1, 2, 6), sv("v1", 1, t0, 1, 6)}},
			map[string]int32{"v3": 0, "v2": 0, "v1": 0}},
		{"from zero: 0 -> 6, the new set", scaleCase{Replicas: 6, NewSet: "v3",
			Sets: []Set{sv("v3", 3, t2, 0, 0), sv("v2", 2, t1, 0, 0), sv("v1", 1, t0, 0, 0)}},
			map[string]int32{"v3": 6}},
		{"saturated but broken new set leaves old Machines", scaleCase{Replicas: 2, MaxSurge: 1, NewSet: "v2",
			Sets: []Set{{Name: "v2", Revision: 2, Created: t2, Spec: 2, Desired: 2, HasDesired: true, MaxReplicas: 3}, sv("v1", 1, t1, 1, 3)}},
			map[string]int32{}},
		{"saturated new set: old sets go", scaleCase{Replicas: 4, NewSet: "v2",
			Sets: []Set{sv("v2", 2, t2, 4, 4), sv("v1", 1, t1, 1, 4)}},
			map[string]int32{"v1": 0}},
		{"missing annotation falls back to status.replicas", scaleCase{Replicas: 5, StatusReplicas: 10, NewSet: "v2",
			Sets: []Set{sv("v2", 2, t2, 4, 0), sv("v1", 1, t1, 6, 0)}},
			map[string]int32{"v2": 2, "v1": 3}},

		// The Machine Controller Manager's rule: scale-out grows only the new set.
		{"seed scale-out: 5 -> 10, only the new set", scaleCase{Replicas: 10, NewSet: "v2",
			Sets: []Set{sv("v2", 2, t2, 2, 5), sv("v1", 1, t1, 3, 5)}},
			map[string]int32{"v2": 7}},
		{"seed scale-out: 7 -> 10 with two old sets", scaleCase{Replicas: 10, NewSet: "v3",
			Sets: []Set{sv("v3", 3, t2, 2, 7), sv("v2", 2, t1, 3, 7), sv("v1", 1, t0, 2, 7)}},
			map[string]int32{"v3": 5}},
		{"seed scale-out with surge: 10 -> 20, maxSurge 2", scaleCase{Replicas: 20, MaxSurge: 2, NewSet: "v2",
			Sets: []Set{sv("v2", 2, t2, 6, 12), sv("v1", 1, t1, 6, 12)}},
			map[string]int32{"v2": 16}},
		{"seed scale-out never puts more than replicas in the new set", scaleCase{Replicas: 12, MaxSurge: 10, NewSet: "v2",
			Sets: []Set{sv("v2", 2, t2, 9, 15), sv("v1", 1, t1, 6, 15)}},
			map[string]int32{"v2": 12}},
		{"seed scale-out, old set the only active one", scaleCase{Replicas: 12, NewSet: "v2",
			Sets: []Set{sv("v2", 2, t2, 0, 10), sv("v1", 1, t1, 10, 10)}},
			map[string]int32{"v2": 2}},
		{"seed scale-in: 10 -> 5, maxSurge 3, all sets in proportion", scaleCase{Replicas: 5, MaxSurge: 3, NewSet: "v2",
			Sets: []Set{sv("v2", 2, t2, 5, 13), sv("v1", 1, t1, 8, 13)}},
			map[string]int32{"v2": 3, "v1": 5}},
		{"seed scale-in: every set in proportion", scaleCase{Replicas: 7, NewSet: "v3",
			Sets: []Set{sv("v3", 3, t2, 2, 10), sv("v2", 2, t1, 5, 10), sv("v1", 1, t0, 3, 10)}},
			// v2 round(5×7/10 = 3.5) = 4, v1 round(2.1) = 2, v3 round(1.4) = 1.
			map[string]int32{"v3": 1, "v2": 4, "v1": 2}},
		{"seed scale-in: leftover adjusted in the largest set (older on ties)", scaleCase{Replicas: 8, NewSet: "v3",
			Sets: []Set{sv("v3", 3, t2, 3, 9), sv("v2", 2, t1, 3, 9), sv("v1", 1, t0, 3, 9)}},
			// Each keeps round(3×8/9) = 3; the one Machine left over goes from v1.
			map[string]int32{"v1": 2}},
		// Paused: no rollout starts, so scale-out goes to the newest old set.
		{"paused before the new set got Machines", scaleCase{Replicas: 14, Paused: true, NewSet: "v3",
			Sets: []Set{sv("v3", 3, t2, 0, 10), sv("v2", 2, t1, 7, 10), sv("v1", 1, t0, 3, 10)}},
			map[string]int32{"v2": 11}},
		{"paused mid-rollout: the new set keeps growing", scaleCase{Replicas: 14, Paused: true, NewSet: "v3",
			Sets: []Set{sv("v3", 3, t2, 2, 10), sv("v2", 2, t1, 5, 10), sv("v1", 1, t0, 3, 10)}},
			map[string]int32{"v3": 6}},
		{"no new set: the newest old set (Kubernetes: 4 -> 5)", scaleCase{Replicas: 5,
			Sets: []Set{sv("v2", 2, t1, 2, 4), sv("v1", 1, t0, 2, 4)}},
			map[string]int32{"v2": 3}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in.input()
			r := Result{Mode: ModeScale, Targets: scale(in)}
			for i := range r.Targets {
				in.finish(&r.Targets[i])
			}
			got := map[string]int32{}
			var before, after int32
			for _, tg := range r.Targets {
				if tg.To != tg.From {
					got[tg.Name] = tg.To
				}
				if tg.To < 0 {
					t.Errorf("%s scaled below zero", tg.Name)
				}
				before += tg.From
				after += tg.To
				// Every set that keeps Machines is sized for the new replicas,
				// so the scaling event is settled in one write per set.
				if s := in.set(tg.Name); tg.To > 0 && s.Desired != in.Replicas && !tg.Annotate {
					t.Errorf("%s keeps %d Machines but its annotations are not refreshed", tg.Name, tg.To)
				}
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("scale = %v, want %v", got, tc.want)
			}
			if after > max(before, in.Replicas+in.MaxSurge) {
				t.Errorf("%d Machines after scaling, above replicas+maxSurge %d", after, in.Replicas+in.MaxSurge)
			}
		})
	}
}

func TestIsScalingEvent(t *testing.T) {
	sets := []Set{sv("v2", 2, t1, 3, 5), {Name: "v1", Spec: 0, Desired: 9, HasDesired: true}}
	if isScalingEvent(5, sets) {
		t.Error("sizes recorded for 5 replicas: not a scaling event")
	}
	if !isScalingEvent(6, sets) {
		t.Error("replicas 6, sets sized for 5: a scaling event")
	}
	if isScalingEvent(6, []Set{{Name: "adopted", Spec: 3}}) {
		t.Error("a set without the annotation says nothing")
	}
}

// TestHeldGrowthKeepsTheScalingEventPending: a set whose growth the surge
// budget or the freeze holds back is not marked as sized for the new
// replicas (no annotation write: the safety controller re-judges a set on
// every annotation change), so the next reconcile grows it further.
func TestHeldGrowthKeepsTheScalingEventPending(t *testing.T) {
	draining := sv("v1", 1, t1, 2, 3)
	draining.Machines, draining.Terminating = 5, 4 // 1 live, 4 being deleted
	for _, frozen := range []bool{false, true} {
		in := Input{Replicas: 3, MaxSurge: 1, Paused: true, Frozen: frozen, New: &draining}
		r := Plan(in)
		tg := r.Targets[len(r.Targets)-1]
		if tg.To != 2 || tg.Annotate || len(r.Writes()) != 0 {
			t.Errorf("frozen %v: %+v, writes %v; want held at 2, no write", frozen, tg, r.Writes())
		}
	}
}
