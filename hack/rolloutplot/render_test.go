package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

const (
	committedData  = "../../docs/images/rollout-timeline.csv"
	committedImage = "../../docs/images/rollout-timeline.svg"
)

// TestCommittedTimelineIsCurrent fails when the committed picture is not
// the one drawn from the committed data (make generate draws it again).
func TestCommittedTimelineIsCurrent(t *testing.T) {
	f, err := os.Open(committedData)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sets, err := readTimeline(f)
	if err != nil {
		t.Fatal(err)
	}
	want, err := render(sets)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(committedImage)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("%s is stale or missing: run `make generate` (or `go run ./hack/rolloutplot`)", committedImage)
	}
}

// TestTotalAddsTheSetsUpOverTime checks the grey line: the sum of every
// set's latest count at each change.
func TestTotalAddsTheSetsUpOverTime(t *testing.T) {
	sets, err := readTimeline(strings.NewReader("seconds,set,machines,running\n" +
		"0,a,1,0\n1,a,2,1\n2,b,1,0\n3,a,1,1\n4,b,2,1\n5,,7,7\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(sets) != 2 || sets[0].name != "a" || sets[1].name != "b" {
		t.Fatalf("sets: %+v", sets)
	}
	var got []int
	for _, p := range total(sets) {
		got = append(got, p.machines)
	}
	want := []int{1, 2, 3, 2, 3}
	if len(got) != len(want) {
		t.Fatalf("total %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("total %v, want %v", got, want)
		}
	}
}

func TestRejectsAFileThatIsNotATimeline(t *testing.T) {
	for _, in := range []string{"", "a,b\n1,2\n", "seconds,set,machines,running\n", "seconds,set,machines,running\nx,a,1,1\n"} {
		if _, err := readTimeline(strings.NewReader(in)); err == nil {
			t.Errorf("%q: no error", in)
		}
	}
}
