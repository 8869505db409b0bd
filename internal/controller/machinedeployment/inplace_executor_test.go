package machinedeployment_test

import (
	"context"
	"sort"
	"strconv"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
)

// fakeExecutor is TEST SCAFFOLDING standing in for the machine
// controller's in-place executor (internal/controller/machine, the other
// half of #16), with the protocol of docs/in-place-updates.md: a Machine
// annotated with InPlaceTargetAnnotation=T and no status.inPlaceUpdate
// for T gets one (phase Draining: status first); next it gets the outcome
// the test chose: Succeeded, then ONE Machine patch that moves it (class,
// version, T's template labels, controller owner T, annotation removed);
// or Failed, or Refused. A Machine whose annotation a person removed after
// a failure gets its status cleared, as the machine controller does. No
// drain, no driver, no node agent: only the writes the orchestration
// reacts to.
type fakeExecutor struct {
	h      *harness
	app    string
	cancel context.CancelFunc
	done   chan struct{}

	mu sync.Mutex
	// outcome decides an update's end; attempt counts from 1.
	outcome  func(m *v1alpha1.Machine, attempt int) v1alpha1.InPlaceUpdatePhase
	attempts map[string]int
	// started names the Machines in the order their updates started.
	started []string
}

func (h *harness) executor(app string, outcome func(m *v1alpha1.Machine, attempt int) v1alpha1.InPlaceUpdatePhase) *fakeExecutor {
	ectx, cancel := context.WithCancel(ctx)
	e := &fakeExecutor{h: h, app: app, cancel: cancel, done: make(chan struct{}), outcome: outcome, attempts: map[string]int{}}
	go func() {
		defer close(e.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-ectx.Done():
				return
			case <-tick.C:
				e.pass(ectx)
			}
		}
	}()
	h.T.Cleanup(e.stop)
	return e
}

func (e *fakeExecutor) stop() {
	e.cancel()
	<-e.done
}

// locked runs f under the executor's lock: the outcome functions run
// under it, and tests read what they recorded through it.
func (e *fakeExecutor) locked(f func()) {
	e.mu.Lock()
	defer e.mu.Unlock()
	f()
}

func (e *fakeExecutor) startedSoFar() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.started...)
}

// pass looks at every Machine once; a failed write is retried next pass.
func (e *fakeExecutor) pass(ectx context.Context) {
	c := controllertest.Env.Client
	list := &v1alpha1.MachineList{}
	if err := c.List(ectx, list, client.InNamespace(e.h.NS), client.MatchingLabels{"app": e.app}); err != nil {
		return
	}
	for i := range list.Items {
		m := &list.Items[i]
		target := m.Annotations[v1alpha1.InPlaceTargetAnnotation]
		u := m.Status.InPlaceUpdate
		switch {
		case !m.DeletionTimestamp.IsZero():
		case target == "" && u != nil && u.Phase != v1alpha1.InPlaceSucceeded:
			// A person asked for a retry: uncordon, clear the status.
			e.setStatus(ectx, m, nil)
		case target == "":
		case u == nil || u.TargetSet != target:
			ms := &v1alpha1.MachineSet{}
			if err := c.Get(ectx, client.ObjectKey{Namespace: m.Namespace, Name: target}, ms); err != nil {
				continue
			}
			now := metav1.Now()
			if e.setStatus(ectx, m, &v1alpha1.InPlaceUpdateStatus{TargetSet: target, Class: ms.Spec.Template.Spec.Class.Name,
				Version: ms.Spec.Template.Spec.Version, Phase: v1alpha1.InPlaceDraining, StartedAt: &now}) {
				e.mu.Lock()
				e.attempts[m.Name]++
				e.started = append(e.started, m.Name)
				e.mu.Unlock()
			}
		case u.Phase == v1alpha1.InPlaceDraining:
			e.mu.Lock()
			phase := e.outcome(m, e.attempts[m.Name])
			e.mu.Unlock()
			next := u.DeepCopy()
			now := metav1.Now()
			next.Phase, next.FinishedAt = phase, &now
			switch phase {
			case v1alpha1.InPlaceFailed:
				next.Message = "boom: the test executor failed it"
			case v1alpha1.InPlaceRefused:
				next.Message = "the test driver cannot make this change in place"
			}
			e.setStatus(ectx, m, next)
		case u.Phase == v1alpha1.InPlaceSucceeded:
			e.move(ectx, m, target)
		}
	}
}

func (e *fakeExecutor) setStatus(ectx context.Context, m *v1alpha1.Machine, u *v1alpha1.InPlaceUpdateStatus) bool {
	base := m.DeepCopy()
	m.Status.InPlaceUpdate = u
	return controllertest.Env.Client.Status().Patch(ectx, m, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})) == nil
}

// move is the one Machine patch that ends a successful update.
func (e *fakeExecutor) move(ectx context.Context, m *v1alpha1.Machine, target string) {
	c := controllertest.Env.Client
	ms := &v1alpha1.MachineSet{}
	if err := c.Get(ectx, client.ObjectKey{Namespace: m.Namespace, Name: target}, ms); err != nil {
		return
	}
	base := m.DeepCopy()
	u := m.Status.InPlaceUpdate
	m.Spec.Version = u.Version
	m.Spec.Class = &v1alpha1.MachineClassReference{Name: u.Class}
	for k, v := range ms.Spec.Template.Metadata.Labels {
		m.Labels[k] = v
	}
	m.Labels[v1alpha1.MachineSetNameLabel] = ms.Name
	delete(m.Annotations, v1alpha1.InPlaceTargetAnnotation)
	refs := []metav1.OwnerReference{*metav1.NewControllerRef(ms, v1alpha1.GroupVersion.WithKind("MachineSet"))}
	for _, ref := range m.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			refs = append(refs, ref)
		}
	}
	m.OwnerReferences = refs
	_ = c.Patch(ectx, m, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}

// writeLog records every write to a namespace's MachineSets and Machines
// with its resourceVersion, so a test can check the order of writes across
// objects (etcd revisions order all writes).
type writeLog struct {
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	events []logged
}

type logged struct {
	rv   int64
	set  *v1alpha1.MachineSet
	mach *v1alpha1.Machine
}

func (h *harness) writeLog() *writeLog {
	h.T.Helper()
	c, err := client.NewWithWatch(controllertest.Env.Config, client.Options{Scheme: controllertest.Env.Scheme})
	if err != nil {
		h.T.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	l := &writeLog{cancel: cancel}
	for _, list := range []client.ObjectList{&v1alpha1.MachineSetList{}, &v1alpha1.MachineList{}} {
		wi, err := c.Watch(wctx, list, client.InNamespace(h.NS))
		if err != nil {
			h.T.Fatal(err)
		}
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer wi.Stop()
			for ev := range wi.ResultChan() {
				if ev.Type != watch.Added && ev.Type != watch.Modified {
					continue
				}
				e := logged{}
				switch o := ev.Object.(type) {
				case *v1alpha1.MachineSet:
					e.set = o
				case *v1alpha1.Machine:
					e.mach = o
				default:
					continue
				}
				obj := ev.Object.(client.Object)
				e.rv, _ = strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
				l.mu.Lock()
				l.events = append(l.events, e)
				l.mu.Unlock()
			}
		}()
	}
	h.T.Cleanup(l.stop)
	return l
}

func (l *writeLog) stop() { l.cancel(); l.wg.Wait() }

// first is the resourceVersion of the first write matching, 0 if none.
func (l *writeLog) first(match func(logged) bool) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	sort.Slice(l.events, func(i, j int) bool { return l.events[i].rv < l.events[j].rv })
	for _, e := range l.events {
		if match(e) {
			return e.rv
		}
	}
	return 0
}

// listed matches a write of set listing machine under key.
func listed(set, key, machine string) func(logged) bool {
	return func(e logged) bool {
		if e.set == nil || e.set.Name != set {
			return false
		}
		for _, n := range plan.Names(e.set.Annotations[key]) {
			if n == machine {
				return true
			}
		}
		return false
	}
}

// unlisted matches a write of set not listing machine under key, after rv.
func unlisted(set, key, machine string, after int64) func(logged) bool {
	in := listed(set, key, machine)
	return func(e logged) bool { return e.rv > after && e.set != nil && e.set.Name == set && !in(e) }
}

// targeted matches a write of machine with its target annotation set to set.
func targeted(machine, set string) func(logged) bool {
	return func(e logged) bool {
		return e.mach != nil && e.mach.Name == machine && e.mach.Annotations[v1alpha1.InPlaceTargetAnnotation] == set
	}
}

// dump is the log for a failed test to read.
func (l *writeLog) dump(t interface{ Logf(string, ...any) }) {
	l.mu.Lock()
	defer l.mu.Unlock()
	sort.Slice(l.events, func(i, j int) bool { return l.events[i].rv < l.events[j].rv })
	for _, e := range l.events {
		switch {
		case e.set != nil:
			t.Logf("%d set %s replicas %d out=%q in=%q status %d", e.rv, e.set.Name, e.set.Spec.Replicas,
				e.set.Annotations[v1alpha1.InPlaceMovingOutAnnotation], e.set.Annotations[v1alpha1.InPlaceMovingInAnnotation], e.set.Status.Replicas)
		case e.mach != nil:
			u := ""
			if e.mach.Status.InPlaceUpdate != nil {
				u = string(e.mach.Status.InPlaceUpdate.Phase)
			}
			t.Logf("%d machine %s owner %s target %q update %s", e.rv, e.mach.Name, metav1.GetControllerOf(e.mach).Name,
				e.mach.Annotations[v1alpha1.InPlaceTargetAnnotation], u)
		}
	}
}
