package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TestTimelineCountsMachinesPerSet feeds the recorder a small rollout and
// checks the counts it writes: a Machine being deleted leaves its set's
// count, a repeated event writes nothing.
func TestTimelineCountsMachinesPerSet(t *testing.T) {
	m := func(uid, set string, phase v1alpha1.MachinePhase, deleting bool) *v1alpha1.Machine {
		mm := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Labels: map[string]string{v1alpha1.MachineSetNameLabel: set}}}
		mm.Status.Phase = phase
		if deleting {
			mm.DeletionTimestamp = &metav1.Time{}
		}
		return mm
	}
	tl := newTimeline()
	tl.observe(m("1", "old", "", false), true)
	tl.observe(m("1", "old", v1alpha1.PhaseRunning, false), true)
	tl.observe(m("1", "old", v1alpha1.PhaseRunning, false), true) // no change
	tl.observe(m("2", "new", "", false), true)
	tl.observe(m("2", "new", v1alpha1.PhaseRunning, false), true)
	tl.observe(m("1", "old", v1alpha1.PhaseRunning, true), true) // deletion starts
	tl.observe(m("1", "old", v1alpha1.PhaseRunning, true), false)
	path := filepath.Join(t.TempDir(), "t.csv")
	if err := tl.write(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n")[1:] {
		got = append(got, l[strings.Index(l, ",")+1:]) // without the time
	}
	want := []string{"old,1,0", "old,1,1", "new,1,0", "new,1,1", "old,0,0"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("rows %v, want %v", got, want)
	}
}
