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
// soonest due time, or the next pass over every Machine), and that a
// quiet target keeps no object.
func TestJudgedSums(t *testing.T) {
	now := time.Date(2026, 12, 4, 5, 0, 0, 0, time.UTC)
	j := &judged{fullAt: now, targets: map[string]*target{}, due: map[string]time.Time{}, active: map[string]bool{}}
	m := func(name string) *v1alpha1.Machine {
		return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: "1"}}
	}
	j.set("a", &target{machine: m("a"), verdict: verdict{healthy: true}}, true, now)
	j.set("b", &target{machine: m("b"), verdict: verdict{healthy: true, recheckIn: time.Minute}}, true, now)
	j.set("c", &target{machine: m("c"), verdict: verdict{reason: ReasonUnhealthyNode}}, false, now)
	j.set("d", &target{machine: m("d"), verdict: verdict{healthy: true, recheckIn: time.Second}, conflict: []string{"other"}}, false, now)
	if j.expected != 3 || len(j.due) != 1 || !j.active["c"] || !j.active["d"] || len(j.active) != 2 {
		t.Fatalf("expected %d, due %v, active %v; want 3, b's, c and d", j.expected, j.due, j.active)
	}
	if j.targets["a"].machine != nil || j.targets["c"].machine == nil {
		t.Errorf("a quiet target keeps its Machine, or an active one does not")
	}
	if got := j.recheckIn(now); got != time.Minute {
		t.Errorf("recheckIn %s, want b's minute", got)
	}
	j.set("b", nil, true, now)                                                       // gone
	j.set("d", &target{machine: m("d"), verdict: verdict{healthy: true}}, true, now) // conflict over
	if j.expected != 3 || len(j.due) != 0 || len(j.active) != 1 {
		t.Fatalf("expected %d, due %v, active %v; want 3 (a, c, d), none, c", j.expected, j.due, j.active)
	}
	if got := j.recheckIn(now.Add(time.Minute)); got != changed.FullPassEvery-time.Minute {
		t.Errorf("recheckIn %s, want the next full pass, %s", got, changed.FullPassEvery-time.Minute)
	}
	if got := j.acting(); len(got) != 1 || got[0].machine.Name != "c" {
		t.Errorf("acting %v, want c", got)
	}
}
