package main

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// timeline records, at every Machine event of the fleet, how many
// Machines each MachineSet has (not being deleted) and how many of them
// are Running: the data of the rollout picture in docs/rollout.md, drawn
// by hack/rolloutplot (-timeline FILE).
type timeline struct {
	mu       sync.Mutex
	start    time.Time
	machines map[types.UID]timelineMachine
	counts   map[string]*timelineCount
	rows     []string
}

type timelineMachine struct {
	set     string
	running bool
}

type timelineCount struct{ machines, running int }

func newTimeline() *timeline {
	return &timeline{machines: map[types.UID]timelineMachine{}, counts: map[string]*timelineCount{}}
}

// observe takes one Machine event; a Machine being deleted no longer
// counts for its set.
func (t *timeline) observe(m *v1alpha1.Machine, exists bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := time.Now()
	if t.start.IsZero() {
		t.start = now
	}
	old, had := t.machines[m.UID]
	cur, has := timelineMachine{m.Labels[v1alpha1.MachineSetNameLabel], m.Status.Phase == v1alpha1.PhaseRunning}, exists && m.DeletionTimestamp == nil
	if had == has && old == cur {
		return
	}
	if had {
		t.count(old.set).add(old, -1)
		delete(t.machines, m.UID)
	}
	if has {
		t.count(cur.set).add(cur, 1)
		t.machines[m.UID] = cur
	}
	at := now.Sub(t.start).Seconds()
	for _, set := range []string{old.set, cur.set} {
		if (set == old.set && had) || (set == cur.set && has) {
			c := t.count(set)
			t.rows = append(t.rows, fmt.Sprintf("%.2f,%s,%d,%d", at, set, c.machines, c.running))
		}
		if old.set == cur.set {
			break
		}
	}
}

func (t *timeline) count(set string) *timelineCount {
	c, ok := t.counts[set]
	if !ok {
		c = &timelineCount{}
		t.counts[set] = c
	}
	return c
}

func (c *timelineCount) add(m timelineMachine, d int) {
	c.machines += d
	if m.running {
		c.running += d
	}
}

// write writes the rows as CSV: seconds since the first Machine event,
// MachineSet, its Machines, its Running Machines.
func (t *timeline) write(path string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return os.WriteFile(path, []byte("seconds,set,machines,running\n"+strings.Join(t.rows, "\n")+"\n"), 0o644)
}
