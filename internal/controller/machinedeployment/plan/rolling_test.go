package plan

import (
	"slices"
	"testing"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// set is a MachineSet with spec Machines, all present, available of them available.
func set(name string, spec, available int32) Set {
	return Set{Name: name, Spec: spec, Counts: Counts{Machines: spec, Available: available, Left: spec}}
}

func rollingInput(replicas, surge, unavailable int32, newSet Set, old []Set) Input {
	return Input{Replicas: replicas, MaxSurge: surge, MaxUnavailable: unavailable, New: &newSet, Old: old}
}

func TestRollingNewSet(t *testing.T) {
	draining := set("old", 8, 8)
	draining.Machines, draining.Terminating = 10, 2 // two Machines still being deleted
	tests := []struct {
		name            string
		replicas, surge int32
		policy          v1alpha1.ReplacementPolicy
		newSet          Set
		old             []Set
		want            int32
	}{
		{"start: surge 2 of 10", 10, 2, "", set("new", 0, 0), []Set{set("old", 10, 10)}, 2},
		{"surge spent", 10, 2, "", set("new", 2, 0), []Set{set("old", 10, 10)}, 2},
		{"Machines being deleted still count", 10, 2, "", set("new", 2, 2), []Set{draining}, 2},
		{"TerminationStarted: Machines being deleted do not", 10, 2, v1alpha1.TerminationStarted, set("new", 2, 2), []Set{draining}, 4},
		{"room after old Machines are gone", 10, 2, "", set("new", 2, 2), []Set{set("old", 8, 8)}, 4},
		{"never past replicas", 3, 5, "", set("new", 1, 1), []Set{set("old", 1, 1)}, 3},
		{"above replicas (scaled in): cut to replicas", 4, 1, "", set("new", 6, 6), nil, 4},
		{"Kubernetes case 2: a roll-over at 13 starts at 0", 10, 3, "", set("new", 0, 0),
			[]Set{set("v1", 8, 8), set("v2", 5, 0)}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := rollingInput(tc.replicas, tc.surge, 0, tc.newSet, tc.old)
			in.Policy = tc.policy
			got := rolling(in)
			if to := got[len(got)-1].To; to != tc.want {
				t.Errorf("new set to %d, want %d (%s)", to, tc.want, got[len(got)-1].Why)
			}
		})
	}
}

func TestRollingOldSets(t *testing.T) {
	stale := set("old", 8, 10) // just scaled down; it still has 10 available
	tests := []struct {
		name                  string
		replicas, unavailable int32
		newSet                Set
		old                   []Set
		want                  []int32
	}{
		{"maxUnavailable 0: one old per new available", 10, 0, set("new", 2, 2), []Set{set("old", 10, 10)}, []int32{8}},
		{"new Machines not available yet: wait", 10, 0, set("new", 2, 0), []Set{set("old", 10, 10)}, []int32{10}},
		{"availability of a shrinking set is not trusted beyond its spec", 10, 0, set("new", 2, 2), []Set{stale}, []int32{8}},
		{"MCM's example, 30%: old down to 70% at once", 10, 3, set("new", 3, 0), []Set{set("old", 10, 10)}, []int32{7}},
		{"Kubernetes case 1: crashing new set, a failed old Machine: hold", 10, 2, set("new", 5, 0),
			[]Set{set("old", 8, 7)}, []int32{8}},
		{"Kubernetes case 1 after rollback: the crashing set goes", 10, 2, set("good", 8, 7),
			[]Set{set("crashing", 5, 0)}, []int32{1}},
		{"Kubernetes case 2: roll-over removes the crashing set first", 10, 2, set("new", 0, 0),
			[]Set{set("v1", 8, 8), set("v2", 5, 0)}, []int32{8, 0}},
		{"unhealthy old Machines go without cost", 10, 0, set("new", 1, 1),
			[]Set{set("old", 10, 8)}, []int32{9}},
		{"oldest set first", 6, 0, set("new", 4, 4),
			[]Set{set("v1", 2, 2), set("v2", 2, 2)}, []int32{0, 2}},
		{"nothing old", 3, 1, set("new", 3, 3), []Set{set("v1", 0, 0)}, []int32{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			targets := rolling(rollingInput(tc.replicas, 1, tc.unavailable, tc.newSet, tc.old))
			var got []int32
			for _, tg := range targets[:len(tc.old)] {
				got = append(got, tg.To)
			}
			if !slices.Equal(got, tc.want) {
				t.Fatalf("old sets to %v, want %v", got, tc.want)
			}
			// Whatever it removes, what stays sure to be available never
			// drops below replicas − maxUnavailable, unless it already was.
			before := tc.newSet.sureAvailable(tc.newSet.Spec)
			after := before
			for i, o := range tc.old {
				before += o.sureAvailable(o.Spec)
				after += o.sureAvailable(got[i])
			}
			if floor := min(before, tc.replicas-tc.unavailable); after < floor {
				t.Errorf("availability drops to %d, below %d", after, floor)
			}
		})
	}
}

func TestOnDelete(t *testing.T) {
	left := func(s Set, n int32) Set { s.Left = n; return s }
	tests := []struct {
		name     string
		replicas int32
		old      []Set
		wantNew  int32
		wantOld  []int32
	}{
		{"nothing deleted yet", 3, []Set{set("old", 3, 3)}, 0, []int32{3}},
		{"a user deleted one", 3, []Set{left(set("old", 3, 3), 2)}, 1, []int32{2}},
		{"never grows an old set", 3, []Set{left(set("old", 2, 2), 3)}, 1, []int32{2}},
		{"two old sets", 5, []Set{left(set("v1", 2, 2), 1), left(set("v2", 3, 3), 1)}, 3, []int32{1, 1}},
		{"all replaced", 2, []Set{left(set("old", 1, 1), 0)}, 2, []int32{0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := Input{Strategy: v1alpha1.OnDeleteStrategy, Replicas: tc.replicas, New: &Set{Name: "new"}, Old: tc.old}
			targets := Plan(in).Targets
			var gotOld []int32
			for _, tg := range targets[:len(tc.old)] {
				gotOld = append(gotOld, tg.To)
			}
			if gotNew := targets[len(targets)-1].To; gotNew != tc.wantNew || !slices.Equal(gotOld, tc.wantOld) {
				t.Errorf("OnDelete = %d, %v; want %d, %v", gotNew, gotOld, tc.wantNew, tc.wantOld)
			}
		})
	}
}

func TestWritesShrinkFirst(t *testing.T) {
	r := Result{Targets: []Target{
		{Name: "a", From: 3, To: 5}, {Name: "b", From: 4, To: 1}, {Name: "c", From: 2, To: 2},
		{Name: "d", From: 2, To: 2, Annotate: true}, {Create: true, To: 1},
	}}
	var got []string
	for _, w := range r.Writes() {
		got = append(got, w.Name)
	}
	if want := []string{"b", "d", "", "a"}; !slices.Equal(got, want) {
		t.Errorf("writes %q, want %q", got, want)
	}
}

func TestFrozenGrowsNothing(t *testing.T) {
	in := rollingInput(10, 2, 0, set("new", 2, 2), []Set{set("old", 8, 8)})
	in.Frozen = true
	for _, tg := range Plan(in).Targets {
		if tg.To > tg.From {
			t.Errorf("%s grows from %d to %d while frozen", tg.Name, tg.From, tg.To)
		}
	}
	in.New = nil
	r := Plan(in)
	if c := r.Targets[len(r.Targets)-1]; !c.Create || c.To != 0 {
		t.Errorf("a frozen deployment creates its new set with %d", c.To)
	}
}
