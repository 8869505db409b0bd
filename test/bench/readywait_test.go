package main

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func node(uid string, created time.Time, ready corev1.ConditionStatus, since time.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), CreationTimestamp: metav1.NewTime(created)},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: ready, LastTransitionTime: metav1.NewTime(since)},
		}},
	}
}

// Each new Node's wait is counted once, at its first Ready; a Node Ready
// again after a flap, or already Ready when the benchmark started to
// watch, is not a new Node waiting.
func TestReadyWaitsCountEachNewNodeOnce(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 1, 0, 0, 0, time.UTC)
	w := newReadyWaits()
	// Ready before the watch began, whenever its condition says.
	w.observe(node("old", t0.Add(-time.Hour), corev1.ConditionTrue, t0.Add(10*time.Second)), true)
	for i := range 100 {
		uid := string(rune('a'+i%26)) + string(rune('a'+i/26))
		created := t0.Add(time.Duration(i) * time.Second)
		w.observe(node(uid, created, corev1.ConditionFalse, created), false)
		w.observe(node(uid, created, corev1.ConditionTrue, created.Add(time.Duration(i+1)*time.Second)), false)
		// The same Node again, and after a flap: not new.
		w.observe(node(uid, created, corev1.ConditionTrue, created.Add(time.Duration(i+1)*time.Second)), false)
		w.observe(node(uid, created, corev1.ConditionTrue, created.Add(time.Hour)), false)
	}
	w.observe(node("old", t0.Add(-time.Hour), corev1.ConditionTrue, t0.Add(time.Minute)), false)
	got := w.between(t0, t0.Add(time.Hour))
	want := readyWaitFigures{Nodes: 100, P50: 50, P99: 99, Max: 100}
	if got == nil || *got != want {
		t.Fatalf("waits %+v, want %+v", got, want)
	}
	// Only the Nodes Ready within the window: Node i turned Ready at
	// t0 + 2i + 1 s, so [t0+100s, t0+150s) holds i = 50..74, waits 51..75.
	got = w.between(t0.Add(100*time.Second), t0.Add(150*time.Second))
	want = readyWaitFigures{Nodes: 25, P50: 63, P99: 75, Max: 75}
	if got == nil || *got != want {
		t.Fatalf("waits in the window %+v, want %+v", got, want)
	}
	if got := w.between(t0.Add(2*time.Hour), t0.Add(3*time.Hour)); got != nil {
		t.Errorf("waits where no Node turned Ready: %+v", got)
	}
	// A Node deleted and made again under the same name is a new Node:
	// a new UID. A forgotten UID seen Ready again counts anew.
	w.forget(node("aa", t0, corev1.ConditionTrue, t0))
	w.observe(node("aa", t0.Add(2*time.Hour), corev1.ConditionTrue, t0.Add(2*time.Hour+7*time.Second)), false)
	if got := w.between(t0.Add(2*time.Hour), t0.Add(3*time.Hour)); got == nil || got.Nodes != 1 || got.Max != 7 {
		t.Errorf("the Node made again: %+v, want one wait of 7 s", got)
	}
}
