package machinehealthcheck

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
)

// TestJudgedSums checks what a kept judgement sums as targets come,
// change and go: the expected count (no conflict), the due times (passing
// with a timeout running), the active names, the next reconcile (the
// soonest due time, or the next pass over every Machine), the targets to
// act on, and that no kept target holds its Machine.
func TestJudgedSums(t *testing.T) {
	now := time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
	j := &judged{fullAt: now, targets: map[string]*target{}, due: map[string]time.Time{}, active: map[string]bool{}}
	m := func(name string) *v1alpha1.Machine {
		return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}}
	}
	var acting []*target
	acting = j.set("a", &target{machine: m("a"), verdict: verdict{healthy: true}}, true, now, acting)
	acting = j.set("b", &target{machine: m("b"), verdict: verdict{healthy: true, recheckIn: time.Minute}}, true, now, acting)
	acting = j.set("c", &target{machine: m("c"), verdict: verdict{reason: ReasonUnhealthyNode}}, false, now, acting)
	acting = j.set("d", &target{machine: m("d"), verdict: verdict{healthy: true, recheckIn: time.Second}, conflict: []string{"other"}}, false, now, acting)
	if j.expected != 3 || len(j.due) != 1 || !j.active["c"] || !j.active["d"] || len(j.active) != 2 {
		t.Fatalf("expected %d, due %v, active %v; want 3, b's, c and d", j.expected, j.due, j.active)
	}
	if len(acting) != 2 || acting[0].machine.Name != "c" || acting[1].machine.Name != "d" {
		t.Errorf("acting %v, want c, then d, with their Machines", acting)
	}
	for name, k := range j.targets {
		if k.machine != nil {
			t.Errorf("kept target %s holds its Machine", name)
		}
	}
	if got := j.targets["d"].conflict; len(got) != 1 {
		t.Errorf("kept target d's conflict %v, want [other]", got)
	}
	if got := j.recheckIn(now); got != time.Minute {
		t.Errorf("recheckIn %s, want b's minute", got)
	}
	j.set("b", nil, true, now, nil)                                                       // gone
	j.set("d", &target{machine: m("d"), verdict: verdict{healthy: true}}, true, now, nil) // conflict over
	if j.expected != 3 || len(j.due) != 0 || len(j.active) != 1 {
		t.Fatalf("expected %d, due %v, active %v; want 3 (a, c, d), none, c", j.expected, j.due, j.active)
	}
	if got := j.recheckIn(now.Add(time.Minute)); got != changed.FullPassEvery-time.Minute {
		t.Errorf("recheckIn %s, want the next full pass, %s", got, changed.FullPassEvery-time.Minute)
	}
}
