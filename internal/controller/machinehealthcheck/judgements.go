package machinehealthcheck

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// judged is what a health check's reconciles found of the Machines it
// selects, kept between them (Reconciler.judgements): a reconcile judges
// again only the Machines whose events (their own or their Node's)
// arrived since, those whose verdict may have changed by time, and the
// few it acts on; a fleet that passes costs nothing per Machine at an
// event (docs/benchmarks.md, issue 35 item 3). It keeps verdicts, never
// a Machine or a Node: a reconcile acts only on targets it judged itself
// (judge's acting), so kept objects would only hold memory, the cache's
// objects twice or, once remediate has copied them, deep copies.
type judged struct {
	// context is what every verdict depends on besides its Machine, its
	// Node and the clock (judgedContext); all are judged again when it
	// changes.
	context string
	// fullAt is when every selected Machine was last judged.
	fullAt time.Time
	// targets are the selected Machines, by name, with their verdicts
	// (no machine nor node).
	targets map[string]*target
	// expected counts the targets no other health check selects, and
	// failing those of them whose verdict is failing.
	expected, failing int
	// due are the targets that pass but whose verdict changes by time
	// alone (a timeout running), and when it may.
	due map[string]time.Time
	// active names the targets a reconcile acts on: every one but those
	// that pass, passed before, and have no grant to withdraw nor a wait
	// (quiet).
	active map[string]bool
}

// judgedContext identifies the health check's spec and every other
// check of its namespace that may select the same Machines (conflicts).
func judgedContext(mhc *v1alpha1.MachineHealthCheck, checks []v1alpha1.MachineHealthCheck) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s/%d", mhc.UID, mhc.Generation)
	for i := range checks {
		c := &checks[i]
		fmt.Fprintf(&b, ";%s/%s/%d/%t", c.Name, c.UID, c.Generation, c.DeletionTimestamp.IsZero())
	}
	return b.String()
}

// judge brings j (nil: none kept) up to date: every selected Machine
// judged when j is nil, its context changed or a full pass is due
// (changed.FullPassEvery: a lost event delays a verdict by at most that);
// else only those named (changed since), the active ones, those granted
// a remediation and those due. It returns what the reconcile keeps and
// the targets it acts on, by name: every active one, judged now, with its
// Machine and Node.
func (r *Reconciler) judge(ctx context.Context, mhc *v1alpha1.MachineHealthCheck, j *judged, names map[string]bool,
	grants map[string]bool, now time.Time) (*judged, []*target, error) {
	checks := &v1alpha1.MachineHealthCheckList{}
	if err := r.Client.List(ctx, checks, client.InNamespace(mhc.Namespace), client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	g := &judgment{r: r, mhc: mhc, grants: grants, now: now, selecting: machinefacts.NewHealthCheckSelectors(checks.Items)}
	g.own, g.selects = machinefacts.HealthCheckSelector(mhc)
	context := judgedContext(mhc, checks.Items)
	if j == nil || j.context != context || changed.FullPassDue(j.fullAt, now) {
		return g.all(ctx, context)
	}
	redo := maps.Clone(names)
	if redo == nil {
		redo = map[string]bool{}
	}
	maps.Copy(redo, j.active)
	for name := range grants {
		redo[name] = true
	}
	for name, at := range j.due {
		if !now.Before(at) {
			redo[name] = true
		}
	}
	var acting []*target
	for _, name := range slices.Sorted(maps.Keys(redo)) {
		// The cache's own object, as all's: a reconcile that acts on a
		// wave's new Machines holds each until it ends (remediate copies
		// the ones it writes). Nil: gone.
		m, err := ownerindex.Get(ctx, r.Views, r.Client, mhc.Namespace, name, &v1alpha1.Machine{})
		if err != nil {
			return nil, nil, err
		}
		t, err := g.one(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		acting = j.set(name, t, g.quiet(t), now, acting)
	}
	if checkJudgements.Load() {
		g.recheck(ctx, j)
	}
	return j, acting, nil
}

// judgment is one reconcile's judging: the check, its selector and
// every check's of the namespace, the grants and the clock.
type judgment struct {
	r         *Reconciler
	mhc       *v1alpha1.MachineHealthCheck
	own       labels.Selector
	selects   bool
	selecting machinefacts.HealthCheckSelectors
	grants    map[string]bool
	now       time.Time
}

// all judges every Machine of the namespace, and returns the active
// targets by name. The Machines are the cache's own objects
// (docs/architecture.md, "Reading objects"), to be read only; remediate
// copies the ones it writes.
func (g *judgment) all(ctx context.Context, context string) (*judged, []*target, error) {
	machines, err := ownerindex.InNamespace[*v1alpha1.Machine](ctx, g.r.Views, g.r.Client, &v1alpha1.MachineList{}, g.mhc.Namespace)
	if err != nil {
		return nil, nil, err
	}
	j := &judged{context: context, fullAt: g.now, targets: map[string]*target{}, due: map[string]time.Time{}, active: map[string]bool{}}
	var acting []*target
	for _, m := range machines {
		t, err := g.one(ctx, m)
		if err != nil {
			return nil, nil, err
		}
		acting = j.set(m.Name, t, g.quiet(t), g.now, acting)
	}
	slices.SortFunc(acting, func(a, b *target) int { return strings.Compare(a.machine.Name, b.machine.Name) })
	return j, acting, nil
}

// one judges m (nil: gone); nil when the check does not judge it: not
// selected, or being deleted (already on its way out).
func (g *judgment) one(ctx context.Context, m *v1alpha1.Machine) (*target, error) {
	if m == nil {
		return nil, nil
	}
	set := labels.Set(m.Labels)
	// A preserved failed Machine is remediated already (its replacement
	// exists) and kept for debugging: like one being deleted, it is
	// neither expected, unhealthy nor in flight, or it would hold
	// maxInFlight and the short-circuit for the whole preserve timeout
	// (docs/health-checks.md).
	if !m.DeletionTimestamp.IsZero() || (machinefacts.Failed(m) && machinefacts.Preserved(m)) || !g.selects || !g.own.Matches(set) {
		return nil, nil
	}
	t := &target{machine: m}
	for _, name := range g.selecting.Selecting(set) {
		if name != g.mhc.Name {
			t.conflict = append(t.conflict, name)
		}
	}
	// The Node is read for the verdict only, without a copy, and not
	// kept on the target: nothing after the judging reads it.
	var node *corev1.Node
	if m.Status.NodeRef != nil {
		read := &corev1.Node{}
		if err := g.r.Target.Get(ctx, client.ObjectKey{Name: m.Status.NodeRef.Name}, read, client.UnsafeDisableDeepCopy); err == nil {
			node = read
		} else if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	t.verdict = judge(&g.mhc.Spec.Checks, m, node, g.now)
	t.versions = versionsOf(m, node)
	return t, nil
}

// quiet says whether t (nil: not judged) needs nothing of a reconcile:
// it passes, has passed before (recovered would write nothing), and has
// no grant to withdraw nor a wait for a budget.
func (g *judgment) quiet(t *target) bool {
	return t == nil || (len(t.conflict) == 0 && t.verdict.healthy && recordedPassing(t.machine) &&
		!g.grants[t.machine.Name] && !disruption.WaitsFor(t.machine, v1alpha1.DisruptionRemediation))
}

// set records t (nil: not judged) as name's judgement at now, and
// returns acting with t appended when it is active.
func (j *judged) set(name string, t *target, quiet bool, now time.Time, acting []*target) []*target {
	if old := j.targets[name]; old != nil && len(old.conflict) == 0 {
		j.expected--
		if old.verdict.failing {
			j.failing--
		}
	}
	delete(j.targets, name)
	delete(j.due, name)
	delete(j.active, name)
	if t == nil {
		return acting
	}
	j.targets[name] = &target{verdict: t.verdict, conflict: t.conflict, versions: t.versions}
	if len(t.conflict) == 0 {
		j.expected++
		if t.verdict.failing {
			j.failing++
		}
		if t.verdict.healthy && t.verdict.recheckIn > 0 {
			j.due[name] = now.Add(t.verdict.recheckIn)
		}
	}
	if quiet {
		return acting
	}
	j.active[name] = true
	return append(acting, t)
}

// recheckIn is when the next reconcile is due without an event: the
// soonest verdict that may change by time alone, or the next pass over
// every Machine, whichever comes first.
func (j *judged) recheckIn(now time.Time) time.Duration {
	in := changed.FullPassIn(j.fullAt, now)
	for _, at := range j.due {
		in = min(in, max(at.Sub(now), time.Millisecond))
	}
	return in
}

// versionsOf identifies what a verdict was made of: the Machine's and
// its Node's resourceVersions.
func versionsOf(m *v1alpha1.Machine, node *corev1.Node) [2]string {
	v := [2]string{m.ResourceVersion}
	if node != nil {
		v[1] = node.ResourceVersion
	}
	return v
}

// checkJudgements makes every reconcile that judged only some Machines
// judge them all too and compare (recheck), recording a difference in
// judgementDifferences: the package's tests set it, so every test of the
// health check checks what it kept.
var checkJudgements atomic.Bool

var (
	judgementDifferencesMu sync.Mutex
	judgementDifferences   []string
)

// recheck judges every Machine again and records where j differs for a
// Machine and Node of the same versions: a kept verdict, conflict or
// activity that a judgement now would not give, a target kept that would
// not be judged, or a due time passed.
func (g *judgment) recheck(ctx context.Context, j *judged) {
	fresh, _, err := g.all(ctx, j.context)
	if err != nil {
		return
	}
	var diffs []string
	for name, t := range j.targets {
		f := fresh.targets[name]
		switch {
		case f == nil:
			m := &v1alpha1.Machine{}
			if err := g.r.Client.Get(ctx, client.ObjectKey{Namespace: g.mhc.Namespace, Name: name}, m); err == nil && m.ResourceVersion == t.versions[0] {
				diffs = append(diffs, name+": kept, but not judged now")
			}
		case f.versions != t.versions:
			// an event on its way: the next reconcile reads it
		case f.verdict.healthy != t.verdict.healthy || f.verdict.failing != t.verdict.failing ||
			f.verdict.reason != t.verdict.reason || f.verdict.message != t.verdict.message ||
			!slices.Equal(f.conflict, t.conflict) || fresh.active[name] != j.active[name]:
			diffs = append(diffs, fmt.Sprintf("%s: kept %+v (conflict %v, active %t), judged now %+v (conflict %v, active %t)",
				name, t.verdict, t.conflict, j.active[name], f.verdict, f.conflict, fresh.active[name]))
		}
		if at, ok := j.due[name]; ok && !g.now.Before(at) {
			diffs = append(diffs, fmt.Sprintf("%s: due at %s, kept past it", name, at))
		}
	}
	if len(diffs) == 0 {
		return
	}
	slices.Sort(diffs)
	judgementDifferencesMu.Lock()
	defer judgementDifferencesMu.Unlock()
	judgementDifferences = append(judgementDifferences, g.mhc.Namespace+"/"+g.mhc.Name+": "+strings.Join(diffs, "; "))
}
