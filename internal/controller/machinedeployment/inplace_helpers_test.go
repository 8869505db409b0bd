package machinedeployment_test

import (
	"context"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// nodeAgent plays the node agents of a test's Nodes (none runs in
// envtest): a Node the machine controller handed a version
// (docs/in-place-updates.md, "What the machine controller does": update
// label "ready") is answered as the agent would, succeeded (the kubelet
// reports the version first) or failed, as answer decides for that
// Machine's attempt (counted from 1). Everything else an update does —
// status, cordon, drain, the move to the target set — is the real
// machine controller's.
type nodeAgent struct {
	h      *harness
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	answer   func(machine string, attempt int) bool
	attempts map[string]int
}

// agentMessage is what the test's agent says when it fails an update.
const agentMessage = "boom: the test's node agent failed it"

func (h *harness) nodeAgent(answer func(machine string, attempt int) bool) *nodeAgent {
	actx, cancel := context.WithCancel(ctx)
	a := &nodeAgent{h: h, cancel: cancel, done: make(chan struct{}), answer: answer, attempts: map[string]int{}}
	go func() {
		defer close(a.done)
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-actx.Done():
				return
			case <-tick.C:
				a.pass(actx)
			}
		}
	}()
	h.T.Cleanup(a.stop)
	return a
}

func (a *nodeAgent) stop() {
	a.cancel()
	<-a.done
}

// pass answers every Node of the test handed an update; the Node's name
// is its Machine's. A failed write is retried next pass (the label is
// still "ready").
func (a *nodeAgent) pass(actx context.Context) {
	c := controllertest.Env.Client
	nodes := &corev1.NodeList{}
	if err := c.List(actx, nodes, client.MatchingLabels{v1alpha1.NodeUpdateLabel: v1alpha1.NodeUpdateReady}); err != nil {
		return
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if !strings.HasPrefix(n.Name, a.h.Prefix) {
			continue
		}
		version := n.Labels[v1alpha1.NodeUpdateVersionLabel]
		a.mu.Lock()
		ok := a.answer(n.Name, a.attempts[n.Name]+1)
		a.mu.Unlock()
		if ok && n.Status.NodeInfo.KubeletVersion != version {
			base := n.DeepCopy()
			n.Status.NodeInfo.KubeletVersion = version
			if c.Status().Patch(actx, n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})) != nil {
				continue
			}
		}
		base := n.DeepCopy()
		if ok {
			n.Labels[v1alpha1.NodeUpdateLabel] = v1alpha1.NodeUpdateSucceeded
		} else {
			n.Labels[v1alpha1.NodeUpdateLabel] = v1alpha1.NodeUpdateFailed
			if n.Annotations == nil {
				n.Annotations = map[string]string{}
			}
			n.Annotations[v1alpha1.NodeUpdateMessageAnnotation] = agentMessage
		}
		if c.Patch(actx, n, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})) == nil {
			a.mu.Lock()
			a.attempts[n.Name]++
			a.mu.Unlock()
		}
	}
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

// started names the Machines in the order the machine controller started
// their updates: a write of status.inPlaceUpdate in phase Draining after
// a write without it, or with another phase or target (every start writes
// Draining first, docs/in-place-updates.md).
func (l *writeLog) started() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	sort.Slice(l.events, func(i, j int) bool { return l.events[i].rv < l.events[j].rv })
	last := map[string]*v1alpha1.InPlaceUpdateStatus{}
	var out []string
	for _, e := range l.events {
		if e.mach == nil {
			continue
		}
		u, prev := e.mach.Status.InPlaceUpdate, last[e.mach.Name]
		if u != nil && u.Phase == v1alpha1.InPlaceDraining && (prev == nil || prev.Phase != u.Phase || prev.TargetSet != u.TargetSet) {
			out = append(out, e.mach.Name)
		}
		last[e.mach.Name] = u
	}
	return out
}

// listed matches a write of set listing machine under key.
func listed(set, key, machine string) func(logged) bool {
	return func(e logged) bool {
		if e.set == nil || e.set.Name != set {
			return false
		}
		for _, n := range machinefacts.InPlaceNames(e.set.Annotations[key]) {
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
