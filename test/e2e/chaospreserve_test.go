package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// chaosPreserved is the chaos run's preservation (docs/preservation.md):
// a person asks to keep a Machine (preserve: now) and later lets it go.
// At most one Machine is kept at a time: each costs a VM beside its
// replacement.
type chaosPreserved struct {
	mu    sync.Mutex
	names []string // Machines the run annotated and has not released
	asked int      // preservations asked for in the run
	// since is when each Machine's latest preservation was asked for.
	since map[string]time.Time
}

// preserveSettles is how long after the request a deletion already
// under way may still show the annotation: a MachineSet that chose its
// victim from a cache a moment older than the request.
const preserveSettles = 2 * time.Second

// preserve annotates one live Machine not kept yet, picked by pick (the
// run's seeded source), and returns what happened, for the run's log.
func (p *chaosPreserved) preserve(s *scenario, pick func(n int) int) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.names) > 0 {
		return fmt.Sprintf("preserve: %s is kept already", p.names[0])
	}
	ms, err := s.machines()
	if err != nil {
		return fmt.Sprintf("preserve: listing Machines: %v", err)
	}
	var live []string
	for _, m := range ms {
		if m.DeletionTimestamp.IsZero() {
			live = append(live, m.Name)
		}
	}
	if len(live) == 0 {
		return "preserve: no live Machine"
	}
	slices.Sort(live)
	name := live[pick(len(live))]
	asked := time.Now()
	if err := setPreserve(s.ns, name, v1alpha1.PreserveNow); err != nil {
		return fmt.Sprintf("preserve %s: %v", name, err)
	}
	p.names = append(p.names, name)
	p.asked++
	if p.since == nil {
		p.since = map[string]time.Time{}
	}
	p.since[name] = asked
	return fmt.Sprintf("preserve Machine %s (preserve: now), as a person debugging it would", name)
}

// release removes the annotation from every Machine the run kept; a
// Machine already gone is released too.
func (p *chaosPreserved) release(s *scenario) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var done, failed []string
	for _, name := range p.names {
		if err := setPreserve(s.ns, name, ""); client.IgnoreNotFound(err) != nil {
			failed = append(failed, fmt.Sprintf("%s (%v)", name, err))
			continue
		}
		done = append(done, name)
	}
	p.names = slices.DeleteFunc(p.names, func(n string) bool { return slices.Contains(done, n) })
	return fmt.Sprintf("unpreserve %v; failed: %v", done, failed)
}

// count is how many preservations the run asked for.
func (p *chaosPreserved) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked
}

// setPreserve sets (or, with value "", removes) a Machine's preserve
// annotation with a merge patch, leaving every other field alone.
func setPreserve(ns, name, value string) error {
	m := &v1alpha1.Machine{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
		return err
	}
	patch := client.MergeFrom(m.DeepCopy())
	if value == "" {
		delete(m.Annotations, v1alpha1.PreserveAnnotation)
	} else {
		if m.Annotations == nil {
			m.Annotations = map[string]string{}
		}
		m.Annotations[v1alpha1.PreserveAnnotation] = value
	}
	return k8s.Patch(context.Background(), m, patch)
}

// kept is the invariant: no Machine is being deleted while it is
// preserved (machinefacts.Preserved: the annotation asks, or its Preserved
// condition is True), its deletion started more than preserveSettles
// after the run asked (the run never deletes a Machine itself).
func (p *chaosPreserved) kept() check {
	return func(r *recorder) string {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, m := range r.machinesLocked() {
			asked, ok := p.since[m.Name]
			if ok && !m.DeletionTimestamp.IsZero() && machinefacts.Preserved(m) && m.DeletionTimestamp.Time.After(asked.Add(preserveSettles)) {
				return fmt.Sprintf("Machine %s is being deleted (since %s) while preserved, asked for at %s (rv %s)",
					m.Name, m.DeletionTimestamp.UTC().Format(time.RFC3339), asked.UTC().Format(time.RFC3339Nano), m.ResourceVersion)
			}
		}
		return ""
	}
}
