package main

import (
	"fmt"
	"math"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// readyWaits records how long each new Node waited for kwok, the
// benchmark's kubelets, to make it Ready: its Ready condition's
// lastTransitionTime less its creationTimestamp, both as the API server
// has them (whole seconds). A Machine is Running only once its Node is
// Ready, so a kwok that falls behind slows a scenario as a slow manager
// would; this tells them apart. At 5000 Nodes kwok's 4 Stage workers once
// made new Nodes wait up to 297 s (docs/benchmarks.md).
type readyWaits struct {
	mu sync.Mutex
	// ready are the Nodes seen Ready at least once: a Node Ready again
	// after a flap is not new, and its wait would be its age.
	ready map[types.UID]bool
	waits []readyWait
}

// readyWait is one Node's wait, by when it turned Ready.
type readyWait struct {
	at      time.Time
	seconds float64
}

// readyWaitFigures sum up the waits of the Nodes that turned Ready during
// a scenario.
type readyWaitFigures struct {
	Nodes int     `json:"nodes"`
	P50   float64 `json:"p50"`
	P99   float64 `json:"p99"`
	Max   float64 `json:"max"`
}

func newReadyWaits() *readyWaits {
	return &readyWaits{ready: map[types.UID]bool{}}
}

// observe records n's wait the first time it is seen Ready. A Node found
// Ready in the informer's first list is remembered without a wait: it
// turned Ready before the benchmark watched.
func (w *readyWaits) observe(n *corev1.Node, initialList bool) {
	if !nodeReady(n) {
		return
	}
	c := readyCondition(n)
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.ready[n.UID] {
		return
	}
	w.ready[n.UID] = true
	if !initialList {
		w.waits = append(w.waits, readyWait{at: c.LastTransitionTime.Time, seconds: c.LastTransitionTime.Sub(n.CreationTimestamp.Time).Seconds()})
	}
}

// forget drops a deleted Node.
func (w *readyWaits) forget(n *corev1.Node) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.ready, n.UID)
}

// between sums up the waits of the Nodes that turned Ready in [from, to),
// nil when none did. The transition times are whole seconds: from is
// taken down to its second.
func (w *readyWaits) between(from, to time.Time) *readyWaitFigures {
	w.mu.Lock()
	var s []float64
	for _, r := range w.waits {
		if !r.at.Before(from.Truncate(time.Second)) && r.at.Before(to) {
			s = append(s, r.seconds)
		}
	}
	w.mu.Unlock()
	if len(s) == 0 {
		return nil
	}
	slices.Sort(s)
	at := func(q float64) float64 { return s[int(math.Ceil(q*float64(len(s))))-1] }
	return &readyWaitFigures{Nodes: len(s), P50: at(0.5), P99: at(0.99), Max: s[len(s)-1]}
}

func (f *readyWaitFigures) line() string {
	return fmt.Sprintf("%d new Nodes, p50 %.0f s, p99 %.0f s, max %.0f s", f.Nodes, f.P50, f.P99, f.Max)
}
