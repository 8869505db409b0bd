package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// recorder watches the scenario's Machines, Pods and Nodes and keeps every
// state it observes. Invariants (checks) run after every single event, so
// a violation lasting one resourceVersion is caught; what happened in which
// order is judged by resourceVersion, which a single etcd orders globally.
type recorder struct {
	s      *scenario
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu sync.Mutex
	// objs holds the current objects by kind and name.
	objs map[string]map[string]client.Object
	// synced holds the kinds listed at least once.
	synced map[string]bool
	// versions is every observed version of every Machine, by name.
	versions map[string][]machineVersion
	// phases is each Machine's sequence of observed phases.
	phases map[string][]v1alpha1.MachinePhase
	// nodeDeletions and machineDeletions are the DELETED events seen, and
	// the objects a relist found gone.
	nodeDeletions    []deletion
	machineDeletions []*v1alpha1.Machine
	// goneUnseen names the Machines a relist found gone: their versions
	// between the watch's break and the relist were never seen. hidden
	// counts the deletions verify could not judge for it.
	goneUnseen map[string]bool
	hidden     int
	// relisting: a relist is being applied; the checks wait for its end.
	relisting bool
	// history reads what a broken watch missed from etcd (fillGap);
	// lastRV is the newest resourceVersion seen of each kind; gapReads
	// counts the reads, gapEvents the versions they found.
	history             *etcdHistory
	lastRV              map[string]int64
	gapReads, gapEvents int
	// podDeletions are the DELETED events of pods.
	podDeletions []podDeletion
	checks       []check
	violations   []string
	// checksRun counts the invariant checks made; reported, the
	// violations each check (by its index in checks) reported.
	checksRun int
	reported  map[int]int
}

// check returns a description of what is wrong with the current state, or
// "". It runs with the recorder locked.
type check func(r *recorder) string

type machineVersion struct {
	rv   int64
	node string
	// providerID finds the Machine of a Node it deleted before it
	// recorded the Node (a Machine deleted as its Node registered).
	providerID string
	deletion   *v1alpha1.MachineDeletionStatus
	// seen is when the recorder received this version.
	seen time.Time
	// stale: a relist found the Machine gone; this is the last version
	// seen before, under the list's resourceVersion.
	stale                         bool
	phase                         v1alpha1.MachinePhase
	inPlace                       v1alpha1.InPlaceUpdatePhase
	op                            v1alpha1.LastOperation
	failureReason, failureMessage string
}

type deletion struct {
	name string
	rv   int64
	// providerID is a deleted Node's spec.providerID.
	providerID string
	// unseen: a relist found it gone, rv is the list's; it was deleted
	// between the watch's break and rv.
	unseen bool
}

// podDeletion is a pod's DELETED event: the resourceVersion of its
// deletion and the pod's last state (the event's, or the last one seen
// when a relist found it gone), with its name and Node.
type podDeletion struct {
	rv  int64
	pod *corev1.Pod
}

// The kinds a recorder follows.
const (
	kindMachine = "Machine"
	kindNode    = "Node"
	kindPod     = "Pod"
)

// newRecorder returns a recorder of s that watches nothing yet.
func newRecorder(s *scenario, checks ...check) *recorder {
	return &recorder{
		s: s, checks: checks,
		objs:       map[string]map[string]client.Object{kindMachine: {}, kindNode: {}, kindPod: {}},
		versions:   map[string][]machineVersion{},
		phases:     map[string][]v1alpha1.MachinePhase{},
		synced:     map[string]bool{},
		goneUnseen: map[string]bool{},
		lastRV:     map[string]int64{},
	}
}

// record starts watching; it stops when the test ends.
func (s *scenario) record(checks ...check) *recorder {
	ctx, cancel := context.WithCancel(context.Background())
	r := newRecorder(s, checks...)
	r.cancel = cancel
	r.history = newEtcdHistory(cluster.EtcdURL(), k8s.Scheme())
	s.t.Cleanup(r.stop)
	ns := client.InNamespace(s.ns)
	for kind, list := range map[string]func() client.ObjectList{
		kindMachine: func() client.ObjectList { return &v1alpha1.MachineList{} },
		kindNode:    func() client.ObjectList { return &corev1.NodeList{} },
		kindPod:     func() client.ObjectList { return &corev1.PodList{} },
	} {
		r.done.Add(1)
		go func() {
			defer r.done.Done()
			r.follow(ctx, kind, list, ns)
		}()
	}
	// The first lists must be in before the scenario acts.
	s.eventually(30*time.Second, "the recorder's first lists", func() (bool, error) {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.synced) == 3, nil
	})
	return r
}

func (r *recorder) stop() {
	r.cancel()
	r.done.Wait()
}

// follow lists and watches one kind until ctx ends, relisting whenever the
// watch breaks (the API server may be stopped on purpose).
func (r *recorder) follow(ctx context.Context, kind string, newList func() client.ObjectList, ns client.ListOption) {
	var opts []client.ListOption
	if kind != kindNode {
		opts = append(opts, ns)
	}
	for ctx.Err() == nil {
		list := newList()
		if err := k8s.List(ctx, list, opts...); err != nil {
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		r.fillGap(ctx, kind, list.GetResourceVersion())
		r.relisted(kind, list)
		w, err := k8s.Watch(ctx, newList(), append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})...)
		if err != nil {
			sleep(ctx, 500*time.Millisecond)
			continue
		}
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok || ev.Type == watch.Error || ev.Type == watch.Bookmark {
				continue
			}
			r.mu.Lock()
			r.apply(kind, ev.Type, obj)
			r.lastRV[kind] = max(r.lastRV[kind], resourceVersion(obj))
			r.mu.Unlock()
		}
		w.Stop()
	}
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// etcdPrefix is where the API server stores the scenario's objects of kind.
func (r *recorder) etcdPrefix(kind string) string {
	switch kind {
	case kindMachine:
		return "/registry/machine.millwright.dev/machines/" + r.s.ns + "/"
	case kindNode:
		return "/registry/minions/"
	}
	return "/registry/pods/" + r.s.ns + "/"
}

// fillGap applies, before a relist at listRV, the versions of kind stored
// since the last one seen: a watch broken by a kube-apiserver restart
// resumes with a list, and what changed in between (a Machine's last
// deletion steps, a Node's deletion) would otherwise be seen only as its
// end state. They are judged with the list, as one state (relisted).
func (r *recorder) fillGap(ctx context.Context, kind, listRV string) {
	r.mu.Lock()
	from := r.lastRV[kind]
	r.mu.Unlock()
	to, _ := strconv.ParseInt(listRV, 10, 64)
	if r.history == nil || from == 0 || to <= from {
		return
	}
	events, err := r.history.between(ctx, r.etcdPrefix(kind), from, to)
	if err != nil {
		r.s.t.Logf("recorder: the %ss stored between rv %d and %d not read: %v", kind, from, to, err)
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.relisting = true
	for _, e := range events {
		r.apply(kind, e.typ, e.obj)
	}
	r.relisting = false
	r.gapReads++
	r.gapEvents += len(events)
}

func resourceVersion(obj interface{ GetResourceVersion() string }) int64 {
	rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	return rv
}

// relisted replaces a kind's objects by a fresh list, as events.
func (r *recorder) relisted(kind string, list client.ObjectList) {
	items, err := meta.ExtractList(list)
	if err != nil {
		panic(err) // typed lists always extract
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	// A list is one state: judged as a whole, not object by object, when
	// a new version of one Machine would meet the stale versions of those
	// the list no longer holds (two Machines disrupted at once, one of
	// them long gone).
	r.relisting = true
	seen := map[string]bool{}
	for _, it := range items {
		obj := it.(client.Object)
		seen[obj.GetName()] = true
		r.apply(kind, watch.Modified, obj)
	}
	for name, old := range r.objs[kind] {
		if !seen[name] {
			gone := old.DeepCopyObject().(client.Object)
			gone.SetResourceVersion(list.GetResourceVersion())
			if kind == kindMachine {
				r.goneUnseen[name] = true
			}
			r.apply(kind, watch.Deleted, gone)
			if kind == kindNode && len(r.nodeDeletions) > 0 && r.nodeDeletions[len(r.nodeDeletions)-1].name == name {
				r.nodeDeletions[len(r.nodeDeletions)-1].unseen = true
			}
			r.s.t.Logf("recorder: a relist at rv %s found %s %s gone (last seen at rv %s)", list.GetResourceVersion(), kind, name, old.GetResourceVersion())
		}
	}
	r.relisting = false
	r.synced[kind] = true
	r.lastRV[kind] = max(r.lastRV[kind], resourceVersion(list))
	r.runChecksLocked(fmt.Sprintf("a relist of %ss at rv %s", kind, list.GetResourceVersion()))
}

func (r *recorder) apply(kind string, typ watch.EventType, obj client.Object) {
	name := obj.GetName()
	if kind == kindNode && !r.s.ownsNode(name) {
		return
	}
	rv, _ := strconv.ParseInt(obj.GetResourceVersion(), 10, 64)
	if typ == watch.Deleted {
		delete(r.objs[kind], name)
	} else {
		r.objs[kind][name] = obj
	}
	switch kind {
	case kindNode:
		if typ == watch.Deleted {
			r.nodeDeletions = append(r.nodeDeletions, deletion{name: name, rv: rv, providerID: obj.(*corev1.Node).Spec.ProviderID})
		}
	case kindPod:
		if typ == watch.Deleted {
			r.podDeletions = append(r.podDeletions, podDeletion{rv: rv, pod: obj.(*corev1.Pod)})
		}
	case kindMachine:
		m := obj.(*v1alpha1.Machine)
		r.versions[name] = append(r.versions[name], machineVersion{rv: rv, node: nodeOf(m), providerID: m.Spec.ProviderID, deletion: m.Status.Deletion,
			seen: time.Now(), stale: typ == watch.Deleted && r.goneUnseen[name], phase: m.Status.Phase, inPlace: inPlacePhase(m), op: m.Status.LastOperation, failureReason: m.Status.FailureReason, failureMessage: m.Status.FailureMessage})
		if p := r.phases[name]; m.Status.Phase != "" && (len(p) == 0 || p[len(p)-1] != m.Status.Phase) {
			r.phases[name] = append(p, m.Status.Phase)
		}
		if typ == watch.Deleted {
			r.machineDeletions = append(r.machineDeletions, m)
		}
	}
	if r.relisting {
		return // judged once the whole list is in (relisted)
	}
	r.runChecksLocked(fmt.Sprintf("%s %s %s rv %d", typ, kind, name, rv))
}

// runChecksLocked runs every check on the current state, after what
// (the event that made it).
func (r *recorder) runChecksLocked(after string) {
	if len(r.synced) < len(r.objs) {
		// The first lists are still coming in: judging a half-listed world
		// (Nodes but no Machines yet) would report what never was.
		return
	}
	for i, c := range r.checks {
		if c == nil {
			continue // removed
		}
		r.checksRun++
		v := c(r)
		if v == "" {
			continue
		}
		// Each check keeps its first 20 reports: a noisy one must not
		// hide another's.
		if r.reported == nil {
			r.reported = map[int]int{}
		}
		if r.reported[i]++; r.reported[i] <= 20 {
			r.violations = append(r.violations, fmt.Sprintf("%s (after %s)", v, after))
		}
	}
}

// inPlacePhase is the phase of a Machine's in-place update, "" for none.
func inPlacePhase(m *v1alpha1.Machine) v1alpha1.InPlaceUpdatePhase {
	if u := m.Status.InPlaceUpdate; u != nil {
		return u.Phase
	}
	return ""
}

// inPlaceEnds counts the Machines seen ending an in-place update, by
// how it ended (Succeeded, Failed, Refused).
func (r *recorder) inPlaceEnds() map[v1alpha1.InPlaceUpdatePhase]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[v1alpha1.InPlaceUpdatePhase]int{}
	for _, vs := range r.versions {
		ended := map[v1alpha1.InPlaceUpdatePhase]bool{}
		for _, v := range vs {
			switch v.inPlace {
			case v1alpha1.InPlaceSucceeded, v1alpha1.InPlaceFailed, v1alpha1.InPlaceRefused:
				ended[v.inPlace] = true
			}
		}
		for phase := range ended {
			out[phase]++
		}
	}
	return out
}

// failures counts the Machines seen Failed, by their failure reason
// (the machine controller's HealthTimeout, a MachineHealthCheck's, ...).
func (r *recorder) failures() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]int{}
	for _, vs := range r.versions {
		for _, v := range vs {
			if v.failureReason != "" {
				out[v.failureReason]++
				break
			}
		}
	}
	return out
}

// machinesLocked returns the current Machines; the recorder must be locked.
func (r *recorder) machinesLocked() []*v1alpha1.Machine {
	var out []*v1alpha1.Machine
	for _, o := range r.objs[kindMachine] {
		out = append(out, o.(*v1alpha1.Machine))
	}
	return out
}

// phasesOf returns each Machine's observed phase sequence.
func (r *recorder) phasesOf() map[string][]v1alpha1.MachinePhase {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string][]v1alpha1.MachinePhase{}
	for k, v := range r.phases {
		out[k] = slices.Clone(v)
	}
	return out
}

// drained reports whether a deletion got past the drain.
func drained(d *v1alpha1.MachineDeletionStatus) bool {
	if d == nil {
		return false
	}
	switch d.Step {
	case v1alpha1.StepPreTerminateHooks, v1alpha1.StepDeleteInfrastructure, v1alpha1.StepDeleteNode:
		return true
	}
	return false
}

// verify fails the test for every invariant violation seen, for every
// Node deleted before its Machine's drain had finished, and for every
// Machine that disappeared without going through its deletion steps.
func (r *recorder) verify() {
	t := r.s.t
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Logf("recorder: %d Machines seen, %d deleted; %d Nodes deleted; %d invariant violations", len(r.versions), len(r.machineDeletions), len(r.nodeDeletions), len(r.violations))
	for _, v := range r.violations {
		t.Errorf("invariant violated: %s", v)
	}
	failures, notes := r.judgeDeletionsLocked()
	for _, n := range notes {
		t.Logf("recorder: %s", n)
	}
	for _, f := range failures {
		t.Error(f)
	}
}

// judgeDeletionsLocked judges the order of every deletion seen: a Node
// deleted before its Machine's drain finished, or a Machine gone without
// its deletion steps, is a failure. A deletion a relist found (the watch
// broke, a kube-apiserver restart, and etcd's history could not be read:
// fillGap) happened out of sight, and so did a Node's deletion while its
// Machine's watch was broken so (the Machine found gone by a relist): the
// Machine's versions in between were not seen, so it is judged only on
// what was seen after it, and otherwise counted in r.hidden and noted.
func (r *recorder) judgeDeletionsLocked() (failures, notes []string) {
	r.hidden = 0
	for _, d := range r.nodeDeletions {
		owner, last := r.stateAtLocked(d)
		switch {
		case owner == "":
			failures = append(failures, fmt.Sprintf("Node %s was deleted (rv %d) but no Machine of the scenario was ever seen with it", d.name, d.rv))
		case drained(last.deletion):
		case !d.unseen && !r.goneUnseen[owner]:
			failures = append(failures, fmt.Sprintf("Node %s was deleted (rv %d) while Machine %s was not drained: deletion status %+v at rv %d", d.name, d.rv, owner, last.deletion, last.rv))
		case r.undrainedAfterLocked(owner, d.rv):
			failures = append(failures, fmt.Sprintf("Node %s was deleted (rv %d, out of sight) while Machine %s was seen not drained afterwards", d.name, d.rv, owner))
		default:
			r.hidden++
			notes = append(notes, fmt.Sprintf("Node %s deleted (rv %d) out of sight; Machine %s last seen not drained at rv %d, its later versions not seen: not judged", d.name, d.rv, owner, last.rv))
		}
	}
	for _, m := range r.machineDeletions {
		if d := m.Status.Deletion; d != nil && (d.ForceReason != "" || d.Drain != nil && d.Drain.Attempts > 0) {
			notes = append(notes, fmt.Sprintf("Machine %s: drain forced (%q) or refused %+v; last operation %q", m.Name, d.ForceReason, d.Drain, m.Status.LastOperation.Description))
		}
		switch {
		case drained(m.Status.Deletion):
		case r.goneUnseen[m.Name]:
			r.hidden++
			notes = append(notes, fmt.Sprintf("Machine %s deleted out of sight (found gone by a relist), last seen with status.deletion %+v: its last steps not seen, not judged", m.Name, m.Status.Deletion))
		default:
			failures = append(failures, fmt.Sprintf("Machine %s disappeared without its deletion steps: status.deletion %+v, phase %s", m.Name, m.Status.Deletion, m.Status.Phase))
		}
	}
	return failures, notes
}

// undrainedAfterLocked reports whether Machine name was seen, at or after
// rv, not being drained any more nor done with it: a version that says its
// drain had not finished after its Node was already gone.
func (r *recorder) undrainedAfterLocked(name string, rv int64) bool {
	for _, v := range r.versions[name] {
		if v.rv >= rv && !v.stale && !drained(v.deletion) {
			return true
		}
	}
	return false
}

// stateAtLocked finds the Machine whose Node was deleted and its last
// version observed before the deletion.
func (r *recorder) stateAtLocked(d deletion) (string, machineVersion) {
	for name, vs := range r.versions {
		if !slices.ContainsFunc(vs, func(v machineVersion) bool {
			return v.node == d.name || d.providerID != "" && v.providerID == d.providerID
		}) {
			continue
		}
		var last machineVersion
		for _, v := range vs {
			if v.rv < d.rv && v.rv > last.rv {
				last = v
			}
		}
		return name, last
	}
	return "", machineVersion{}
}

// addCheck adds an invariant from now on, until the returned function
// removes it.
func (r *recorder) addCheck(c check) (remove func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i := len(r.checks)
	r.checks = append(r.checks, c)
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.checks[i] = nil
	}
}

// versionsOf returns every observed version of a Machine, oldest first.
func (r *recorder) versionsOf(name string) []machineVersion {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.versions[name])
}

// machineNames returns the name of every Machine ever observed.
func (r *recorder) machineNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for name := range r.versions {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// podsLocked returns the current Pods; the recorder must be locked.
func (r *recorder) podsLocked() []*corev1.Pod {
	var out []*corev1.Pod
	for _, o := range r.objs[kindPod] {
		out = append(out, o.(*corev1.Pod))
	}
	return out
}
