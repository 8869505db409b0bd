package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// TestDisruptionBudget (issue 17): two MachineDeployments of 4 in one
// namespace, under one MachineDisruptionBudget (maxUnavailable 2)
// selecting both, roll to another class at the same time, each with
// maxUnavailable 4 and maxSurge 4 (only the budget limits their
// deletions), while a health check replaces a Machine whose Node went
// NotReady. At every observed state at most 2 Machines are voluntarily
// disrupted (see voluntaryAtMost), and the budget lists waiting Machines
// at some point: the deployments did want more. docs/disruption-budgets.md
// describes the behaviour checked here.
func TestDisruptionBudget(t *testing.T) {
	const replicas, budget = 4, 2
	s := newScenario(t, "budget")
	s.startManager("--unreachable-force-drain-after", "5s")
	s.createClass("small", simSpec)
	s.createClass("large", largeSpec)
	deployments := []string{s.ns + "-a", s.ns + "-b"}
	for _, name := range deployments {
		s.createPoolDeployment(name, replicas, "small", replicas, replicas)
	}
	before := s.waitFleet(2*replicas, "small", 3*time.Minute)

	pool := v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": s.ns}}
	timeout := metav1.Duration{Duration: 5 * time.Second}
	s.create(&v1alpha1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: s.ns},
		Spec: v1alpha1.MachineHealthCheckSpec{
			Selector: pool,
			Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
				{Type: string(corev1.NodeReady), Status: string(corev1.ConditionFalse), Timeout: timeout},
				{Type: string(corev1.NodeReady), Status: string(corev1.ConditionUnknown), Timeout: timeout},
			}},
		},
	})
	s.create(&v1alpha1.MachineDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "pool", Namespace: s.ns},
		Spec:       v1alpha1.MachineDisruptionBudgetSpec{Selector: pool, MaxUnavailable: intstr.FromInt32(budget)},
	})
	s.eventually(30*time.Second, "the budget to allow 2 disruptions of 8 Machines", func() (bool, error) {
		st := s.budget("pool").Status
		return st.ExpectedMachines == 2*replicas && st.DisruptionsAllowed == budget, fmt.Errorf("status %+v", st)
	})
	watched := s.watchBudget("pool")
	largest := &voluntaryCount{}
	rec := s.record(voluntaryAtMost(budget, largest))

	// The health check's replacement first: it runs on while both
	// deployments roll.
	victim := before[0]
	s.setNodeReady(nodeOf(&victim), false)
	s.eventually(60*time.Second, "the health check to fail Machine "+victim.Name, func() (bool, error) {
		m := &v1alpha1.Machine{}
		err := k8s.Get(context.Background(), client.ObjectKeyFromObject(&victim), m)
		if apierrors.IsNotFound(err) {
			return true, nil // failed and replaced already
		}
		return err == nil && m.Status.FailureReason != "", err
	})
	for _, name := range deployments {
		s.updateNamedDeployment(name, func(md *v1alpha1.MachineDeployment) { md.Spec.Template.Spec.Class.Name = "large" })
	}
	s.waitFleet(2*replicas, "large", 8*time.Minute)
	waiting, unavailable := watched.stop()
	rec.mu.Lock() // the check writes largest under the recorder's lock
	seen := *largest
	rec.mu.Unlock()
	t.Logf("largest number of voluntarily disrupted Machines seen: %d (budget %d, %d states); most Machines the budget listed waiting: %d; largest currentUnavailable: %d",
		seen.max, budget, seen.states, waiting, unavailable)

	if waiting == 0 {
		t.Errorf("the budget never listed a waiting Machine: the two rollouts were never held back")
	}
	if seen.max == 0 {
		t.Errorf("no voluntary disruption seen: the check saw nothing")
	}
	versions := rec.versionsOf(victim.Name)
	replaced := false
	for _, v := range versions {
		replaced = replaced || v.failureReason == "MachineHealthCheck"
	}
	if !replaced {
		t.Errorf("Machine %s was not replaced by the health check: %s", victim.Name, describeVersions(versions))
	}
	rec.verify()
	s.checkNoDuplicateVMs()
}

// voluntaryCount is what voluntaryAtMost saw.
type voluntaryCount struct{ max, states int }

// voluntaryAtMost is the budget's invariant: at most n Machines are
// voluntarily disrupted. A Machine is voluntarily disrupted while it is
// unavailable by the one definition (machinefacts.Unavailable) for a
// disruption Millwright chose — being deleted, or cordoned by an in-place
// update (machinefacts.CordonedInPlace) — and was available when that
// started: not Failed, not marked by a health check, Ready. Decided when the disruption is first
// observed and kept until the Machine is gone, so a Node deleted during
// the drain does not make it involuntary. A failure, a NotReady Node, a
// Machine not yet Ready and a failure's replacement are involuntary: the
// gate never holds them back (they are counted in the budget all the
// same, which only lowers what it grants). A failed Machine kept by
// preservation is not counted at all (docs/disruption-budgets.md, "What
// counts as unavailable": its replacement exists): a disruption it was in
// ends there, and whatever follows its preservation is a failure's.
func voluntaryAtMost(n int, seen *voluntaryCount) check {
	decided := map[string]bool{}
	return func(r *recorder) string {
		count := 0
		var names []string
		for _, m := range r.machinesLocked() {
			down, _ := machinefacts.Unavailable(m)
			disrupted := !m.DeletionTimestamp.IsZero() || machinefacts.CordonedInPlace(m)
			replaced := machinefacts.Failed(m) && machinefacts.Preserved(m)
			if !down || !disrupted || replaced {
				delete(decided, m.Name)
				continue
			}
			voluntary, ok := decided[m.Name]
			if !ok {
				voluntary = m.Status.FailureReason == "" &&
					!meta.IsStatusConditionFalse(m.Status.Conditions, v1alpha1.OwnerRemediatedCondition) &&
					meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.ReadyCondition)
				decided[m.Name] = voluntary
			}
			if voluntary {
				count++
				names = append(names, disruptedAs(m))
			}
		}
		seen.states++
		seen.max = max(seen.max, count)
		if count > n {
			return fmt.Sprintf("%d Machines voluntarily disrupted at once, more than the budget's %d: %v", count, n, names)
		}
		return ""
	}
}

// disruptedAs names a voluntarily disrupted Machine with what made it so,
// for a violation's report: its deletion, its in-place update, its
// preservation.
func disruptedAs(m *v1alpha1.Machine) string {
	var why []string
	if !m.DeletionTimestamp.IsZero() {
		why = append(why, "deleting since "+m.DeletionTimestamp.UTC().Format(time.RFC3339))
	}
	if u := m.Status.InPlaceUpdate; u != nil {
		why = append(why, fmt.Sprintf("in-place %s to %s", u.Phase, u.TargetSet))
	}
	if m.Status.FailureReason != "" {
		why = append(why, "Failed "+m.Status.FailureReason)
	}
	if machinefacts.Preserved(m) {
		why = append(why, "preserved")
	}
	if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition); c != nil {
		why = append(why, fmt.Sprintf("DisruptionAllowed=%s %s", c.Status, c.Reason))
	}
	return fmt.Sprintf("%s (%s; rv %s)", m.Name, strings.Join(why, ", "), m.ResourceVersion)
}

// createPoolDeployment creates a MachineDeployment called name of class,
// rolling out with maxSurge and maxUnavailable, beside others in the
// scenario's namespace: its Machines and Nodes carry pool=<namespace>
// (what a budget or health check selects across deployments) and its
// Machines md=<name> (what it selects). The Machines' own health timeout
// is an hour: only a health check replaces one.
func (s *scenario) createPoolDeployment(name string, replicas int32, class string, maxSurge, maxUnavailable int) {
	s.t.Helper()
	labels := map[string]string{"pool": s.ns, "md": name}
	surge, unavailable := intstr.FromInt(maxSurge), intstr.FromInt(maxUnavailable)
	spec := v1alpha1.MachineSpec{
		Class:     &v1alpha1.MachineClassReference{Name: class},
		Lifecycle: v1alpha1.MachineLifecycle{HealthTimeout: &metav1.Duration{Duration: time.Hour}},
	}
	spec.NodeTemplate.Metadata.Labels = map[string]string{"pool": s.ns}
	s.create(&v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: v1alpha1.LabelSelector{MatchLabels: labels},
			Strategy: v1alpha1.MachineDeploymentStrategy{
				Type:          v1alpha1.RollingUpdateStrategy,
				RollingUpdate: &v1alpha1.RollingUpdateMachineDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
			Template: v1alpha1.MachineTemplateSpec{Metadata: v1alpha1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	})
}

// updateNamedDeployment is updateDeployment for the deployment called name.
func (s *scenario) updateNamedDeployment(name string, edit func(*v1alpha1.MachineDeployment)) {
	s.t.Helper()
	s.eventually(30*time.Second, "an update of MachineDeployment "+name, func() (bool, error) {
		md := &v1alpha1.MachineDeployment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, md); err != nil {
			return false, err
		}
		edit(md)
		err := k8s.Update(context.Background(), md)
		return err == nil, err
	})
}

func (s *scenario) budget(name string) *v1alpha1.MachineDisruptionBudget {
	s.t.Helper()
	b := &v1alpha1.MachineDisruptionBudget{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, b); err != nil {
		s.t.Fatal(err)
	}
	return b
}

// budgetWatcher follows one budget's every version (a watch, not polls).
type budgetWatcher struct {
	cancel context.CancelFunc
	done   sync.WaitGroup
	mu     sync.Mutex
	// waiting is the most Machines status.waitingMachines listed;
	// unavailable the largest status.currentUnavailable.
	waiting, unavailable int
}

// watchBudget starts following the budget called name; it stops when the
// test ends, or with stop.
func (s *scenario) watchBudget(name string) *budgetWatcher {
	ctx, cancel := context.WithCancel(context.Background())
	w := &budgetWatcher{cancel: cancel}
	s.t.Cleanup(func() { w.stop() })
	opts := []client.ListOption{client.InNamespace(s.ns), client.MatchingFields{"metadata.name": name}}
	see := func(b *v1alpha1.MachineDisruptionBudget) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.waiting = max(w.waiting, len(b.Status.WaitingMachines))
		w.unavailable = max(w.unavailable, int(b.Status.CurrentUnavailable))
	}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		for ctx.Err() == nil {
			list := &v1alpha1.MachineDisruptionBudgetList{}
			if err := k8s.List(ctx, list, opts...); err != nil {
				sleep(ctx, 500*time.Millisecond)
				continue
			}
			for i := range list.Items {
				see(&list.Items[i])
			}
			wi, err := k8s.Watch(ctx, &v1alpha1.MachineDisruptionBudgetList{},
				append(opts, &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})...)
			if err != nil {
				sleep(ctx, 500*time.Millisecond)
				continue
			}
			for ev := range wi.ResultChan() {
				if b, ok := ev.Object.(*v1alpha1.MachineDisruptionBudget); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
					see(b)
				}
			}
			wi.Stop()
		}
	}()
	return w
}

// stop ends the watch and returns what it saw.
func (w *budgetWatcher) stop() (waiting, unavailable int) {
	w.cancel()
	w.done.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.waiting, w.unavailable
}
