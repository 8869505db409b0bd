// Package machineset is the MachineSet controller: it keeps spec.replicas
// Machines made from spec.template, replaces Failed ones, removes the
// right ones on scale-down, and pushes in-place template changes to its
// Machines.
package machineset

import (
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/names"
	"github.com/millwright-dev/millwright/internal/patch"
)

// DefaultMaxCreationWindow caps how many Machines of one MachineSet may be
// in creation at once.
const DefaultMaxCreationWindow = 256

// DefaultMaxDeleteBatch caps how many Machines one reconcile of a
// MachineSet deletes. The DELETEs of a batch are sent at once; 5000 of
// them at once (a scale-down to 0) queued in the API server past its
// timeout and starved every other request of the manager
// (docs/benchmarks.md). The next batch follows as soon as the cache shows
// the deletions of this one.
const DefaultMaxDeleteBatch = 256

// Reconciler reconciles MachineSets.
type Reconciler struct {
	// Client reads (from the cache) and writes the control cluster.
	Client client.Client
	// Recorder emits Events on MachineSets.
	Recorder events.EventRecorder
	// MaxCreationWindow caps the slow start; 0 means DefaultMaxCreationWindow.
	MaxCreationWindow int
	// MaxDeleteBatch caps the Machines one reconcile deletes; 0 means
	// DefaultMaxDeleteBatch.
	MaxDeleteBatch int
	// Gate is asked before a victim is deleted: the MachineDisruptionBudgets
	// selecting it must allow it (docs/disruption-budgets.md). Nil allows
	// everything. Failed Machines are replaced without asking: a failure
	// is never held back.
	Gate *disruption.Gate
	// Views reads the Machines it owns as the cache's own objects, not
	// copies (ownerindex.Views). Nil reads them with a List.
	Views *ownerindex.Views

	expectations expectations
	replacements replaceBackoff
	statuses     patch.OwnStatus
	pace         statusPace
	// ledgers keeps each set's ledger between its reconciles, and the
	// names of its Machines whose events arrived since (collect).
	ledgers changed.Store[*ledger]
	// zoneCounts are every set's Machines by zone, kept from the Machine
	// events (SetupWithManager); nil counts the siblings' Machines at
	// each placement.
	zoneCounts *zoneCounts
}

// Reconcile brings one MachineSet's Machines in line with its spec.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (res reconcile.Result, err error) {
	ms := &v1alpha1.MachineSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, ms); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.drop(req.String())
			r.replacements.forget(req.String())
			r.statuses.Forget(req.NamespacedName)
			r.pace.Forget(req.NamespacedName)
			r.ledgers.Forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !ms.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // the garbage collector deletes the Machines
	}
	// Only this controller writes a set's status. It is written on the
	// set's uid and generation when the status read is the one last
	// written (patch.OwnStatus), else on the version read: a reconcile that
	// read the cache before the previous one's status arrived must not
	// write its older counts over newer ones (the MachineDeployment scales
	// old sets down by the available count).
	behind := r.statuses.Behind(ms)
	s := &scope{r: r, ms: ms, patch: patch.New(r.Client, ms, patch.WithOwnStatus(&r.statuses)),
		key: req.String(), log: log.FromContext(ctx), now: time.Now(), victims: map[string]bool{}, pinned: map[string]bool{},
		replaced: map[string]*v1alpha1.Machine{}}
	sel, err := ms.Spec.Selector.AsSelector()
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("invalid selector: %w", err)
	}
	s.selector = sel
	if err := r.collect(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	defer s.restore()
	defer func() {
		if err == nil { // back for the next full pass at the latest (collect)
			res = requeue.Soonest(res, reconcile.Result{RequeueAfter: changed.FullPassIn(s.fullAt, s.now)})
		}
	}()
	if err := r.collectInPlace(ctx, s); err != nil {
		return reconcile.Result{}, err
	}
	s.template = templateHash(ms)
	s.proven = proven(s)

	var scaleErr error // returned after the status says what failed
	if r.expectations.satisfied(s.key, s.owned) {
		res, scaleErr = r.scale(ctx, s)
		s.scaled = true
		if scaleErr == nil {
			scaleErr = r.releaseUnwanted(ctx, s)
		}
	} else {
		// Wait for the cache to show our last creates and deletes; their
		// watch events wake us up, the requeue covers a lost one.
		res = reconcile.Result{RequeueAfter: time.Second}
	}
	if err := r.propagate(ctx, s); err != nil {
		return requeue.Result(res, err)
	}
	statusRes := r.updateStatus(s)
	read := &s.patch.Base().(*v1alpha1.MachineSet).Status
	changed := !equality.Semantic.DeepEqual(read, &s.ms.Status)
	if behind && changed {
		// Read at the version our last status write was made on: the
		// cache has not seen it, a write would be refused. Wait for it.
		return requeue.Result(requeue.Soonest(res, reconcile.Result{RequeueAfter: requeue.ConflictRetry}), scaleErr)
	}
	if wait := r.pace.wait(req.NamespacedName, ms.Spec.Replicas, read, &s.ms.Status, s.now); wait > 0 {
		// Only the counts moved, and they were written less than
		// countInterval ago: the next write takes them (pace.go).
		return requeue.Result(requeue.Soonest(requeue.Soonest(res, statusRes), reconcile.Result{RequeueAfter: wait}), scaleErr)
	}
	// A conflict (the spec changed, or a read behind our own write) means:
	// decide again from fresh state.
	err = s.patch.PatchStatus(ctx, s.ms)
	if apierrors.IsConflict(err) {
		// Decide again from fresh state after requeue.ConflictRetry — or, when
		// scaling failed too, after the error backoff, which
		// controller-runtime applies to an error (a result beside an
		// error is ignored) and which starts shorter.
		s.log.V(1).Info("MachineSet changed since it was read; reconciling again")
		if scaleErr != nil {
			return reconcile.Result{}, scaleErr
		}
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	}
	if err != nil {
		return res, client.IgnoreNotFound(err)
	}
	if changed {
		r.pace.Wrote(req.NamespacedName, s.now)
	}
	return requeue.Result(requeue.Soonest(res, statusRes), scaleErr)
}

// scope is one reconcile of one MachineSet.
type scope struct {
	r  *Reconciler
	ms *v1alpha1.MachineSet
	// patch writes the MachineSet's status (see Reconcile).
	patch    *patch.Helper
	key      string
	selector labels.Selector
	log      logr.Logger
	now      time.Time

	// ledger is the set's Machines, counted (ledger.go); owned are its
	// Machines by name, deleting ones included. They may be the cache's
	// own objects: read them, change copies, and record a changed copy
	// with putUntilEnd.
	ledger *ledger
	owned  map[string]*v1alpha1.Machine
	// fullAt is when the ledger was made from every Machine, read before
	// it was kept (the reconcile's next full pass).
	fullAt time.Time
	// replaced are the Machines putUntilEnd replaced, as they were (nil:
	// not there).
	replaced map[string]*v1alpha1.Machine
	// aliveList are the alive Machines, but those stuck in a zone out of
	// capacity, once read (alive).
	aliveList []*v1alpha1.Machine
	aliveRead bool
	// replicaFailure is why the last create or delete failed, if it did.
	replicaFailure string
	// template identifies the current template (templateHash); proven
	// says whether a Machine made from it has run (see proven.go).
	template string
	proven   bool
	// movingIn are the Machines of other sets moving in (see inplace.go);
	// those moving out are the ledger's movingOut.
	movingIn []*v1alpha1.Machine
	// victims are the Machines the set wants deleted now, asked for or
	// not; waiting says, when some wait for a budget, which (budget.go).
	victims map[string]bool
	// pinned are the victims the budgets let through as unavailable
	// (disruption.Decision.AsUnavailable): deleted only at the version
	// judged.
	pinned  map[string]bool
	waiting string
	scaled  bool
}

// collect brings the set's ledger up to date: with the Machines whose
// events arrived since its last reconcile, read from the cache, or, the
// first time and when the Machines' context changed (ledgerContext), by
// listing the set's Machines and the orphans it may adopt; and so every
// changed.FullPassEvery, which the reconcile's result comes back for
// (Reconcile). Either way it adopts orphans that match its selector and
// releases owned Machines that no longer match.
//
// The ledger holds the cache's own objects, not copies: a reconcile
// mostly only reads them, and deep-copying every Machine on every
// reconcile cost 28–40 % of the manager's CPU at a few thousand
// Machines. Whatever changes a Machine (adopt, release, deleteMachine)
// changes a copy: a change to the cache's object would corrupt the cache
// for every reader.
func (r *Reconciler) collect(ctx context.Context, s *scope) error {
	key := types.NamespacedName{Namespace: s.ms.Namespace, Name: s.ms.Name}
	l, events := r.ledgers.Take(key)
	context := ledgerContext(s.ms, s.selector)
	var err error
	if l == nil || l.context != context || changed.FullPassDue(l.fullAt, s.now) {
		l, err = r.collectAll(ctx, s, context)
	} else {
		for _, name := range slices.Sorted(maps.Keys(events)) {
			var m *v1alpha1.Machine
			if m, err = ownerindex.Get(ctx, r.Views, r.Client, s.ms.Namespace, name, &v1alpha1.Machine{}); err != nil {
				break
			}
			if m == nil {
				l.remove(name) // gone
			} else if err = r.take(ctx, s, l, m); err != nil {
				break
			}
		}
	}
	if err != nil {
		return err // not kept: the next reconcile lists the Machines again
	}
	if checkLedger {
		checkRecount(s, l)
	}
	s.ledger, s.owned, s.fullAt = l, l.machines, l.fullAt
	r.ledgers.Keep(key, l)
	return nil
}

// collectAll makes the set's ledger from its Machines and the orphans
// it may adopt, as the cache shows them.
func (r *Reconciler) collectAll(ctx context.Context, s *scope, context string) (*ledger, error) {
	l := newLedger(s.ms, context)
	l.fullAt = s.now
	for _, uid := range []types.UID{s.ms.UID, ""} { // its own, then the orphans
		machines, err := ownerindex.Controlled[*v1alpha1.Machine](ctx, r.Views, r.Client, &v1alpha1.MachineList{}, s.ms.Namespace, uid)
		if err != nil {
			return nil, err
		}
		for _, m := range machines {
			if err := r.take(ctx, s, l, m); err != nil {
				return nil, err
			}
		}
	}
	return l, nil
}

// take records m, as the cache shows it, in l: one of the set's Machines,
// an orphan it adopts, a Machine it releases, or another's.
func (r *Reconciler) take(ctx context.Context, s *scope, l *ledger, m *v1alpha1.Machine) error {
	owner := metav1.GetControllerOfNoCopy(m)
	matches := s.selector.Matches(labels.Set(m.Labels))
	switch {
	case owner != nil && owner.UID == s.ms.UID && matches:
		l.put(m)
	case owner != nil && owner.UID == s.ms.UID:
		l.remove(m.Name)
		return r.release(ctx, s, m.DeepCopy())
	case owner == nil && matches && m.DeletionTimestamp.IsZero():
		adopted := m.DeepCopy()
		if err := r.adopt(ctx, s, adopted); err != nil {
			return err
		}
		l.put(adopted)
	default:
		l.remove(m.Name) // another set's, or an orphan it does not match
	}
	return nil
}

// scale creates or deletes Machines towards spec.replicas, replacing Failed
// ones, and with a placement (docs/failure-domains.md) moving Machines out
// of zones out of capacity and rebalancing the zones.
func (r *Reconciler) scale(ctx context.Context, s *scope) (res reconcile.Result, err error) {
	z, err := r.zones(ctx, s.ms)
	if err != nil {
		return reconcile.Result{}, err
	}
	l := s.ledger
	failed, interrupted := l.named(l.failed), l.named(l.interrupted)
	alive, joined, inCreation, heldEarly := l.kinds[kindAlive], l.joined, l.inCreation, l.heldEarly
	var stuck []*v1alpha1.Machine
	if z != nil {
		// Waiting for a VM in a zone out of capacity: not alive, replaced
		// below in a zone with capacity.
		var kept []*v1alpha1.Machine
		for _, m := range l.alive() {
			switch {
			case !z.stuck(m):
				kept = append(kept, m)
			case everRunning(m):
				stuck, alive, joined = append(stuck, m), alive-1, joined-1
			default:
				stuck, alive, inCreation = append(stuck, m), alive-1, inCreation-1
			}
		}
		s.aliveList, s.aliveRead = kept, true
	}
	failedEarly := 0
	kept, err := r.autoPreserve(ctx, s, failed)
	if err != nil {
		return reconcile.Result{}, err
	}
	for _, m := range failed {
		if !everRunning(m) {
			failedEarly++
		}
		if kept[m.Name] {
			continue // kept by auto-preservation; replaced all the same
		}
		// Replace it: delete, and let the count below create its successor.
		why := "it failed: " + m.Status.FailureReason
		if err := r.deleteMachine(ctx, s, m, why); err != nil {
			return reconcile.Result{}, err
		}
		r.event(s.ms, corev1.EventTypeNormal, "MachineDeleted", "deleting Machine "+m.Name+": "+why)
	}
	if failedEarly > 0 {
		r.replacements.failed(s.key, failedEarly, joined, s.now)
	}
	if err := r.moveOut(ctx, s, stuck); err != nil {
		return reconcile.Result{}, err
	}
	if z != nil {
		z.count(s.alive())
	}
	movingIn := 0
	for _, m := range s.movingIn {
		if countsIn(m) {
			movingIn++
		}
	}
	diff := int(s.ms.Spec.Replicas) - alive - movingIn
	interruptedWait, err := r.deleteInterrupted(ctx, s, interrupted, diff)
	if err != nil {
		return reconcile.Result{}, err
	}
	defer func() { res = requeue.Soonest(res, reconcile.Result{RequeueAfter: interruptedWait}) }()
	if diff < 0 {
		diff = min(0, diff+rebalanceHeld(s.ms, s.alive(), s.now))
	}
	wait := r.replacements.wait(s.key, joined, s.now)
	// Preserved Machines that failed before running are replaced for up
	// to spec.replicas of them; each one beyond takes a replica's place.
	// They never reach the early-failure backoff above, and with
	// when-failed in the template a class that cannot make a Machine
	// would otherwise get a new one every reconcile for the whole
	// preserve timeout (docs/preservation.md, "How a preserved Machine
	// counts"). Counted from the Machines, so a restart changes nothing.
	if over := heldEarly - int(s.ms.Spec.Replicas); diff > 0 && over > 0 {
		diff -= over
		if diff <= 0 {
			s.replicaFailure = fmt.Sprintf("%d preserved Machines failed before running, more than spec.replicas: no replacement until their preservation ends", heldEarly)
			return reconcile.Result{}, nil
		}
	}
	switch {
	case diff > 0 && s.ms.Labels[v1alpha1.FrozenLabel] != "":
		s.log.Info("frozen by the safety controller: not scaling up", "missing", diff)
	case diff > 0 && wait > 0:
		s.replicaFailure = fmt.Sprintf("Machines failed before running; the next replacement waits %s", wait.Round(time.Second))
		return reconcile.Result{RequeueAfter: wait}, nil
	case diff > 0:
		limit := r.MaxCreationWindow
		if limit <= 0 {
			limit = DefaultMaxCreationWindow
		}
		n := min(diff, creationWindow(s, limit)-inCreation)
		if n <= 0 {
			return reconcile.Result{}, nil // wait for Machines in creation; their updates wake us up
		}
		return reconcile.Result{}, r.createMachines(ctx, s, z.place(n), false)
	case diff < 0:
		return r.deleteVictims(ctx, s, victims(s.alive(), -diff, s.ms.Spec.DeletePolicy, time.Duration(s.ms.Spec.MinReadySeconds)*time.Second, s.now, z))
	case s.ms.Labels[v1alpha1.FrozenLabel] == "" && wait <= 0:
		if to := rebalanceTo(s, z); to != "" {
			return reconcile.Result{}, r.createMachines(ctx, s, []string{to}, true)
		}
	}
	return reconcile.Result{}, nil
}

// createMachines creates a Machine per zone of zones ("" for none) in
// slow-start batches of 1, 2, 4, …, stopping after the first batch with a
// failure, so a call that fails does not fail every time; rebalance marks
// them as rebalance Machines (rebalance.go). The creates of one batch run
// in parallel, as in the Kubernetes ReplicaSet controller: one at a time,
// a large set would grow only as fast as one request's round trip allows.
// The Machines created get no Event: they are objects themselves, each
// with its set and creation time, and the set's status counts them. An
// Event is an API write, and a rolling update creates Machines a few at
// a time, a MachinesCreated Event each time (docs/benchmarks.md, "Fewer
// writes per replacement"). A create that fails
// still has its Warning; the log names the Machines created.
func (r *Reconciler) createMachines(ctx context.Context, s *scope, zones []string, rebalance bool) error {
	var all []string
	defer func() {
		if len(all) > 0 {
			sort.Strings(all)
			s.log.Info("created machines", "count", len(all), "machines", brief.List(all, 5, ", "))
		}
	}()
	for batch := 1; len(zones) > 0; batch *= 2 {
		size := min(batch, len(zones))
		created, err := r.createBatch(ctx, s, zones[:size], rebalance)
		all = append(all, created...)
		if err != nil {
			s.replicaFailure = err.Error()
			r.event(s.ms, corev1.EventTypeWarning, "CreateFailed", s.replicaFailure)
			if apierrors.IsAlreadyExists(err) {
				return nil // a name clash; the next reconcile picks another name
			}
			return err
		}
		zones = zones[size:]
	}
	return nil
}

// createBatch creates a Machine per zone of zones at once, each with its
// clones of the provider templates, and returns the names created and the
// first error.
func (r *Reconciler) createBatch(ctx context.Context, s *scope, zones []string, rebalance bool) ([]string, error) {
	var (
		mu      sync.Mutex
		created []string
		first   error
		wg      sync.WaitGroup
	)
	for _, zone := range zones {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name, err := r.createOne(ctx, s, zone, rebalance)
			mu.Lock()
			defer mu.Unlock()
			if err != nil && first == nil {
				first = err
			}
			if err == nil {
				created = append(created, name)
			}
		}()
	}
	wg.Wait()
	sort.Strings(created)
	return created, first
}

// createOne creates one Machine from the template in zone ("": the
// template's), with its clones.
func (r *Reconciler) createOne(ctx context.Context, s *scope, zone string, rebalance bool) (string, error) {
	m := newMachine(s.ms, s.template)
	if zone != "" {
		m.Spec.FailureDomain = zone
	}
	if rebalance {
		m.Annotations[rebalanceAnnotation] = zone
	}
	clones, err := r.cloneTemplates(ctx, s.ms, m)
	if err != nil {
		return "", fmt.Errorf("cloning the templates of Machine %s failed: %w", m.Name, err)
	}
	r.expectations.expectCreate(s.key, m.Name)
	if err := r.Client.Create(ctx, m); err != nil {
		r.expectations.forget(s.key, m.Name)
		r.deleteClones(ctx, m.Namespace, clones)
		return "", fmt.Errorf("creating a Machine failed: %w", err)
	}
	return m.Name, nil
}

func (r *Reconciler) deleteMachine(ctx context.Context, s *scope, m *v1alpha1.Machine, why string) error {
	err := r.deleteCall(ctx, s, m)
	r.deleted(s, m, why, err)
	return err
}

// deleteBatch deletes ms at once and returns the names deleted, sorted,
// and the first error. One at a time, the old set of a rolling update
// shrank only as fast as one DELETE's round trip allowed, each reconcile
// holding its set for the whole batch (docs/benchmarks.md).
func (r *Reconciler) deleteBatch(ctx context.Context, s *scope, ms []*v1alpha1.Machine, why string) ([]string, error) {
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for i, m := range ms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = r.deleteCall(ctx, s, m)
		}()
	}
	wg.Wait()
	var deleted []string
	var first error
	for i, m := range ms {
		r.deleted(s, m, why, errs[i])
		if errs[i] == nil {
			deleted = append(deleted, m.Name)
		} else if first == nil {
			first = errs[i]
		}
	}
	sort.Strings(deleted)
	return deleted, first
}

// deleteCall deletes m, expecting the deletion in the cache; safe to call
// concurrently.
func (r *Reconciler) deleteCall(ctx context.Context, s *scope, m *v1alpha1.Machine) error {
	r.expectations.expectDelete(s.key, m.Name)
	var opts []client.DeleteOption
	if s.pinned[m.Name] {
		opts = append(opts, client.Preconditions{UID: &m.UID, ResourceVersion: &m.ResourceVersion})
	}
	if err := r.Client.Delete(ctx, m, opts...); client.IgnoreNotFound(err) != nil {
		r.expectations.forget(s.key, m.Name)
		return err
	}
	return nil
}

// deleted records in s the outcome of m's deletion: a failure for the
// status and an Event, or m counted as deleting.
func (r *Reconciler) deleted(s *scope, m *v1alpha1.Machine, why string, err error) {
	if err != nil && s.pinned[m.Name] && apierrors.IsConflict(err) {
		s.log.V(1).Info("a victim let through as unavailable changed before its deletion; asking again", "machine", m.Name)
		return
	}
	if err != nil {
		s.replicaFailure = "deleting Machine " + m.Name + " failed: " + err.Error()
		r.event(s.ms, corev1.EventTypeWarning, "DeleteFailed", s.replicaFailure)
		return
	}
	s.log.Info("deleting machine", "machine", m.Name, "why", why)
	// Counts as deleting for the status below. m may be the cache's object
	// (see collect): mark a copy.
	deleting := m.DeepCopy()
	deleting.DeletionTimestamp = nowPtr(s.now)
	s.putUntilEnd(deleting)
}

// putUntilEnd records in the ledger a change this reconcile made to m
// (deleted it, marked it), so that the rest of the reconcile counts it,
// until the reconcile ends (restore). The next reconcile counts m as the
// cache shows it, as every other reader: the change's own event brings
// it. Kept past the reconcile, a deletion the cache did not show yet
// would satisfy its expectation, and an older event of m arriving after
// it would count m alive again: a second victim for one missing replica.
func (s *scope) putUntilEnd(m *v1alpha1.Machine) {
	if _, ok := s.replaced[m.Name]; !ok {
		s.replaced[m.Name] = s.owned[m.Name]
	}
	s.ledger.put(m)
}

// restore puts back in the ledger the Machines putUntilEnd replaced.
func (s *scope) restore() {
	for name, m := range s.replaced {
		if m == nil {
			s.ledger.remove(name)
		} else {
			s.ledger.put(m)
		}
	}
}

// alive returns the set's alive Machines but those stuck in a zone out of
// capacity, reading every Machine of the set the first time it is called
// in a reconcile: only a scale-down and a set with a placement need them.
func (s *scope) alive() []*v1alpha1.Machine {
	if !s.aliveRead {
		s.aliveList, s.aliveRead = s.ledger.alive(), true
	}
	return s.aliveList
}

// everRunning reports whether the Machine's Node ever joined: Machines
// still on their way count against the creation window, and one that
// made it proves its template (see proven.go). A class whose VMs never
// join therefore costs one Machine at a time.
func everRunning(m *v1alpha1.Machine) bool {
	return m.Status.UnhealthySince != nil || meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ReadyCondition)
}

const nameAlphabet = "bcdfghjklmnpqrstvwxz2456789"

// newMachine makes a Machine from the MachineSet's template, named after
// it; template is the template's hash (see proven.go).
func newMachine(ms *v1alpha1.MachineSet, template string) *v1alpha1.Machine {
	suffix := make([]byte, 5)
	for i := range suffix {
		suffix[i] = nameAlphabet[rand.IntN(len(nameAlphabet))]
	}
	t := ms.Spec.Template
	m := &v1alpha1.Machine{}
	m.Name = names.Join(ms.Name, string(suffix), names.MaxLabelValue) // becomes its Node's name and hostname label
	m.Namespace = ms.Namespace
	m.Labels = map[string]string{v1alpha1.MachineSetNameLabel: ms.Name}
	for k, v := range t.Metadata.Labels {
		m.Labels[k] = v
	}
	if md := ms.Labels[v1alpha1.MachineDeploymentNameLabel]; md != "" {
		m.Labels[v1alpha1.MachineDeploymentNameLabel] = md
	}
	m.Annotations = map[string]string{}
	for k, v := range t.Metadata.Annotations {
		m.Annotations[k] = v
	}
	m.Annotations[v1alpha1.SetTemplateAnnotation] = template
	m.OwnerReferences = []metav1.OwnerReference{ownerRef(ms)}
	// With the finalizer from the start, the machine controller needs no
	// write of its own to add it: one API call less per Machine.
	m.Finalizers = []string{v1alpha1.MachineFinalizer}
	m.Spec = *t.Spec.DeepCopy()
	if m.Spec.ClusterName == "" {
		m.Spec.ClusterName = ms.Spec.ClusterName
	}
	return m
}

func (r *Reconciler) event(obj *v1alpha1.MachineSet, eventType, reason, message string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(obj, nil, eventType, reason, "Reconcile", "%s", message)
	}
}
