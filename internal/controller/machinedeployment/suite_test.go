package machinedeployment_test

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment"
	"github.com/millwright-dev/millwright/internal/controller/machinedisruptionbudget"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
	"github.com/millwright-dev/millwright/internal/disruption"
)

func TestMain(m *testing.M) { os.Exit(controllertest.Run(m)) }

// harness is one test's world: a namespace, a sim cloud with self-Ready
// Nodes, and a manager running the machine, MachineSet, MachineDeployment
// and disruption budget controllers for that namespace, the sets and
// deployments asking the budgets' gate.
type harness struct {
	*controllertest.Harness
}

func newHarness(t *testing.T) *harness {
	return &harness{controllertest.New(t, controllertest.Options{
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			mdb := &machinedisruptionbudget.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader()}
			if err := mdb.SetupWithManager(mgr, 1); err != nil {
				return err
			}
			gate := &disruption.Gate{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("disruption-gate")}
			ms := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller"), Gate: gate, Views: controllertest.ViewsOf(mgr)}
			if err := ms.SetupWithManager(ctx, mgr, 4); err != nil {
				return err
			}
			md := &machinedeployment.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
				Recorder: mgr.GetEventRecorder("machinedeployment-controller"), Gate: gate, Views: controllertest.ViewsOf(mgr)}
			return md.SetupWithManager(ctx, mgr, 2)
		},
	})}
}

var ctx = context.Background()

// deployment creates a MachineDeployment Prefix+name selecting app=name.
// The prefix keeps Machine (and so Node) names apart across tests.
func (h *harness) deployment(name string, replicas int32, class string, edit func(*v1alpha1.MachineDeployment)) *v1alpha1.MachineDeployment {
	h.T.Helper()
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: h.Prefix + name, Namespace: h.NS},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: class}},
			},
		},
	}
	if edit != nil {
		edit(md)
	}
	h.Create(md)
	return md
}

func (h *harness) md(name string) *v1alpha1.MachineDeployment {
	h.T.Helper()
	md := &v1alpha1.MachineDeployment{}
	if err := controllertest.Env.Client.Get(ctx, client.ObjectKey{Namespace: h.NS, Name: h.Prefix + name}, md); err != nil {
		h.T.Fatal(err)
	}
	return md
}

// update edits the MachineDeployment as a person would, retrying on conflicts.
func (h *harness) update(name string, edit func(*v1alpha1.MachineDeployment)) {
	h.T.Helper()
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		md := h.md(name)
		edit(md)
		err := controllertest.Env.Client.Update(ctx, md)
		if apierrors.IsConflict(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		h.T.Fatalf("updating %s: %v", name, err)
	}
}

// sets lists the deployment's MachineSets, oldest first.
func (h *harness) sets(name string) []v1alpha1.MachineSet {
	h.T.Helper()
	list := &v1alpha1.MachineSetList{}
	if err := controllertest.Env.Client.List(ctx, list, client.InNamespace(h.NS),
		client.MatchingLabels{v1alpha1.MachineDeploymentNameLabel: h.Prefix + name}); err != nil {
		h.T.Fatal(err)
	}
	sort.Slice(list.Items, func(i, j int) bool {
		return revision(&list.Items[i]) < revision(&list.Items[j])
	})
	return list.Items
}

func revision(ms *v1alpha1.MachineSet) int {
	n, _ := strconv.Atoi(ms.Annotations[v1alpha1.RevisionAnnotation])
	return n
}

// machines lists the deployment's Machines, being deleted or not.
func (h *harness) machines(name string) []v1alpha1.Machine {
	h.T.Helper()
	list := &v1alpha1.MachineList{}
	if err := controllertest.Env.Client.List(ctx, list, client.InNamespace(h.NS), client.MatchingLabels{"app": name}); err != nil {
		h.T.Fatal(err)
	}
	return list.Items
}

// available reports whether a Machine counts as available (minReadySeconds 0).
func available(m *v1alpha1.Machine) bool {
	return m.DeletionTimestamp.IsZero() && meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ReadyCondition)
}

// waitComplete waits until the rollout is done: every Machine is of the
// current template, available, and none is left over.
func (h *harness) waitComplete(name string, timeout time.Duration) *v1alpha1.MachineDeployment {
	h.T.Helper()
	var md *v1alpha1.MachineDeployment
	var why string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		md = h.md(name)
		st := md.Status
		n := md.Spec.Replicas
		switch {
		case st.ObservedGeneration != md.Generation:
			why = "status not observed"
		case st.UpdatedReplicas != n || st.Replicas != n || st.AvailableReplicas != n:
			why = fmt.Sprintf("status %d/%d/%d (replicas/updated/available), want %d", st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, n)
		default:
			ms := h.sets(name)
			current := ms[len(ms)-1]
			live := 0
			for _, m := range h.machines(name) {
				if !available(&m) || m.Labels[v1alpha1.TemplateHashLabel] != current.Labels[v1alpha1.TemplateHashLabel] {
					why = "machine " + m.Name + " is old or not available"
					return false, nil
				}
				live++
			}
			if int32(live) != n {
				why = fmt.Sprintf("%d machines, want %d", live, n)
				return false, nil
			}
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		h.T.Fatalf("rollout of %s not complete within %s: %s; conditions %+v", name, timeout, why, md.Status.Conditions)
	}
	return md
}

// setsByRevision returns the deployment's MachineSets by revision number.
func (h *harness) setsByRevision(name string) map[int]v1alpha1.MachineSet {
	out := map[int]v1alpha1.MachineSet{}
	for _, ms := range h.sets(name) {
		out[revision(&ms)] = ms
	}
	return out
}

// condition returns the deployment's condition of type t, nil if absent.
func (h *harness) condition(name, t string) *metav1.Condition {
	return meta.FindStatusCondition(h.md(name).Status.Conditions, t)
}

// waitCondition waits until the condition has status and reason.
func (h *harness) waitCondition(name, t string, status metav1.ConditionStatus, reason string, timeout time.Duration) {
	h.T.Helper()
	h.Eventually(timeout, fmt.Sprintf("%s %s/%s", t, status, reason), func() (bool, error) {
		c := h.condition(name, t)
		return c != nil && c.Status == status && c.Reason == reason, nil
	})
}

// watcher follows a deployment's Machines with a watch while a test runs
// and checks an invariant after every event, so a breach lasting a single
// resourceVersion is caught (a list every so often would miss it).
type watcher struct {
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex
	seen   int
	broken []string
}

// watch starts checking check against the deployment's Machines; the
// first list is in when it returns.
func (h *harness) watch(name string, check func([]v1alpha1.Machine) string) *watcher {
	h.T.Helper()
	c, err := client.NewWithWatch(controllertest.Env.Config, client.Options{Scheme: controllertest.Env.Scheme})
	if err != nil {
		h.T.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	w := &watcher{cancel: cancel, done: make(chan struct{})}
	opts := []client.ListOption{client.InNamespace(h.NS), client.MatchingLabels{"app": name}}
	machines := map[string]v1alpha1.Machine{}
	observe := func() {
		items := make([]v1alpha1.Machine, 0, len(machines))
		for _, m := range machines {
			items = append(items, m)
		}
		sort.Slice(items, func(i, j int) bool { return items[i].Name < items[j].Name })
		w.mu.Lock()
		defer w.mu.Unlock()
		w.seen++
		if msg := check(items); msg != "" && len(w.broken) < 10 {
			w.broken = append(w.broken, msg)
		}
	}
	list := func() string {
		l := &v1alpha1.MachineList{}
		if err := c.List(wctx, l, opts...); err != nil {
			return ""
		}
		clear(machines)
		for _, m := range l.Items {
			machines[m.Name] = m
		}
		observe()
		return l.ResourceVersion
	}
	rv := list()
	if rv == "" {
		h.T.Fatal("the watcher's first list failed")
	}
	go func() {
		defer close(w.done)
		for wctx.Err() == nil {
			wi, err := c.Watch(wctx, &v1alpha1.MachineList{}, append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: rv}})...)
			if err == nil {
				for ev := range wi.ResultChan() {
					m, ok := ev.Object.(*v1alpha1.Machine)
					switch {
					case !ok:
						continue
					case ev.Type == watch.Deleted:
						delete(machines, m.Name)
					case ev.Type == watch.Added || ev.Type == watch.Modified:
						machines[m.Name] = *m
					default:
						continue
					}
					rv = m.ResourceVersion
					observe()
				}
				wi.Stop()
			}
			// The watch ended (expired, or the test is over): relist, so
			// no event between the two is lost from the state checked.
			if wctx.Err() == nil {
				if next := list(); next != "" {
					rv = next
				}
			}
		}
	}()
	return w
}

// violations stops the watcher and returns the breaches it saw and the
// number of states it checked.
func (w *watcher) violations() ([]string, int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.broken, w.seen
}

// finish stops the watcher and fails the test if the invariant broke.
func (w *watcher) finish(t *testing.T) {
	t.Helper()
	broken, seen := w.violations()
	if seen < 10 {
		t.Errorf("the watcher saw only %d states", seen)
	}
	for _, b := range broken {
		t.Error(b)
	}
}

func rolling(surge, unavailable string) v1alpha1.MachineDeploymentStrategy {
	s, u := intstr.Parse(surge), intstr.Parse(unavailable)
	return v1alpha1.MachineDeploymentStrategy{Type: v1alpha1.RollingUpdateStrategy,
		RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{MaxSurge: &s, MaxUnavailable: &u}}
}

// useClass points the template at another class: a change that replaces Machines.
func useClass(class string) func(*v1alpha1.MachineDeployment) {
	return func(md *v1alpha1.MachineDeployment) { md.Spec.Template.Spec.Class.Name = class }
}

// TestWatcherCatchesABreachOfOneVersion shows the watcher sees a state that
// lasts one resourceVersion: an annotation set and removed at once.
func TestWatcherCatchesABreachOfOneVersion(t *testing.T) {
	h := newHarness(t)
	h.Create(&v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: "blip", Namespace: h.NS, Labels: map[string]string{"app": "blip"}},
		Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "absent"}},
	})
	w := h.watch("blip", func(ms []v1alpha1.Machine) string {
		for _, m := range ms {
			if m.Annotations["blip"] != "" {
				return "Machine " + m.Name + " is annotated blip"
			}
		}
		return ""
	})
	for _, value := range []string{`"on"`, `null`} {
		patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"blip":`+value+`}}}`))
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "blip", Namespace: h.NS}}
		if err := controllertest.Env.Client.Patch(ctx, m, patch); err != nil {
			t.Fatal(err)
		}
	}
	h.Eventually(10*time.Second, "the watcher to see the annotated version", func() (bool, error) {
		w.mu.Lock()
		defer w.mu.Unlock()
		return len(w.broken) > 0, nil
	})
	broken, _ := w.violations()
	t.Logf("caught: %v", broken)
}
