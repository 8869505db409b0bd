package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// Issue 14's remediation scenarios on the real cluster: a
// MachineHealthCheck replacing a Machine whose Node kwok reports NotReady,
// its short-circuit holding remediation back while too many are down, and
// a failed Machine kept by preservation. docs/health-checks.md and
// docs/preservation.md describe the behaviour checked here.

// TestMachineHealthCheck: a health check (Ready False or Unknown for 5s,
// at most 1 unhealthy) selects a deployment of 3 whose Machines' own
// health timeout is an hour, so only the health check can replace one.
// One NotReady Node gets its Machine replaced, with the health check's
// Event, status and metric saying so. Then two NotReady Nodes at once:
// none is replaced, RemediationAllowed is False and says why; when one
// recovers, the other is replaced and the recovered one kept. kwok's
// Stages (internal/kwok) give the Ready condition the time it turned
// False as lastTransitionTime, as a kubelet does, so the first Machine
// must not be failed before the 5s have run from when its Node was made
// NotReady (less the second condition times lose).
func TestMachineHealthCheck(t *testing.T) {
	s := newScenario(t, "mhc")
	m := s.startManager("--unreachable-force-drain-after", "5s")
	s.createClass("small", simSpec)
	s.createDeploymentOf(3, v1alpha1.MachineSpec{
		Class:     &v1alpha1.MachineClassReference{Name: "small"},
		Lifecycle: v1alpha1.MachineLifecycle{HealthTimeout: &metav1.Duration{Duration: time.Hour}},
	}, 1, 0)
	before := s.waitFleet(3, "small", 2*time.Minute)

	const mhcName = "pool"
	timeout := metav1.Duration{Duration: 5 * time.Second}
	one := intstr.FromInt32(1)
	s.create(&v1alpha1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: mhcName, Namespace: s.ns},
		Spec: v1alpha1.MachineHealthCheckSpec{
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": s.ns}},
			Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
				{Type: string(corev1.NodeReady), Status: string(corev1.ConditionFalse), Timeout: timeout},
				{Type: string(corev1.NodeReady), Status: string(corev1.ConditionUnknown), Timeout: timeout},
			}},
			Remediation: v1alpha1.MachineHealthCheckRemediation{
				TriggerIf: &v1alpha1.MachineHealthCheckTriggerIf{UnhealthyLessThanOrEqualTo: &one},
			},
		},
	})
	s.eventually(30*time.Second, "the health check to count 3 healthy Machines", func() (bool, error) {
		mhc := s.healthCheck(mhcName)
		st := mhc.Status
		if st.ObservedGeneration != mhc.Generation || st.ExpectedMachines != 3 || st.CurrentHealthy != 3 ||
			!meta.IsStatusConditionTrue(st.Conditions, v1alpha1.RemediationAllowedCondition) {
			return false, fmt.Errorf("status %+v", st)
		}
		return true, nil
	})
	rec := s.record()

	// One Node NotReady: its Machine is failed by the health check (not by
	// its own hour-long health timeout) and replaced.
	victim := before[0]
	madeNotReady := time.Now()
	s.setNodeReady(nodeOf(&victim), false)
	s.eventually(90*time.Second, "Machine "+victim.Name+" replaced", func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(ms, func(m v1alpha1.Machine) bool { return m.Name == victim.Name }) {
			return false, fmt.Errorf("%s is still there", victim.Name)
		}
		return s.fleetIs(ms, 3, "small")
	})
	versions := rec.versionsOf(victim.Name)
	if i := slices.IndexFunc(versions, func(v machineVersion) bool {
		return v.failureReason == "MachineHealthCheck"
	}); i < 0 {
		t.Errorf("Machine %s was not failed by the health check: %s", victim.Name, describeVersions(versions))
	} else if after := versions[i].seen.Sub(madeNotReady); after < timeout.Duration-time.Second {
		// The Ready condition's time has whole seconds: up to 1s early.
		t.Errorf("Machine %s was failed by the health check %s after its Node was made NotReady, before the %s timeout: %s",
			victim.Name, after.Round(time.Millisecond), timeout.Duration, describeVersions(versions))
	}
	s.waitEvent(mhcName, "RemediationStarted", victim.Name)
	s.eventually(30*time.Second, "the health check's status after the replacement", func() (bool, error) {
		st := s.healthCheck(mhcName).Status
		return st.ExpectedMachines == 3 && st.CurrentHealthy == 3 && len(st.UnhealthyMachines) == 0, fmt.Errorf("status %+v", st)
	})
	s.waitMetric(m, "millwright_machinehealthcheck_remediations_total", 1,
		"namespace", s.ns, "machinehealthcheck", mhcName, "mode", "owner")

	// Two Nodes NotReady of 3, with at most 1 allowed: none is replaced.
	// Kwok turns each Node NotReady after its own 1-2s delay, so one could
	// be unhealthy alone for a moment and rightly be remediated (1 is
	// allowed): skip-remediation keeps both until both count, and is then
	// removed, leaving the short-circuit alone to hold them.
	fleet, err := s.machines()
	if err != nil {
		t.Fatal(err)
	}
	down := []v1alpha1.Machine{fleet[0], fleet[1]}
	for _, dm := range down {
		s.annotateMachine(dm.Name, v1alpha1.SkipRemediationAnnotation, ptr.To("true"))
	}
	for _, dm := range down {
		s.setNodeReady(nodeOf(&dm), false)
	}
	heldBack := func() error {
		st := s.healthCheck(mhcName).Status
		c := meta.FindStatusCondition(st.Conditions, v1alpha1.RemediationAllowedCondition)
		switch {
		case st.CurrentHealthy != 1 || len(st.UnhealthyMachines) != 2:
			return fmt.Errorf("status %+v, want 2 unhealthy", st)
		case c == nil || c.Status != metav1.ConditionFalse || c.Reason != "TooManyUnhealthy" ||
			!strings.Contains(c.Message, "2 of 3 Machines are unhealthy"):
			return fmt.Errorf("RemediationAllowed %+v", c)
		case st.RemediationsAllowed != 0:
			return fmt.Errorf("remediationsAllowed %d", st.RemediationsAllowed)
		}
		return nil
	}
	s.eventually(30*time.Second, "remediation held back", func() (bool, error) {
		err := heldBack()
		return err == nil, err
	})
	s.waitEvent(mhcName, "RemediationRestricted", "2 of 3 Machines are unhealthy")
	s.waitMetric(m, "millwright_machinehealthcheck_short_circuited", 1, "namespace", s.ns, "machinehealthcheck", mhcName)
	stop := rec.addCheck(untouched(down[0].Name, down[1].Name))
	for _, dm := range down {
		s.annotateMachine(dm.Name, v1alpha1.SkipRemediationAnnotation, nil)
	}
	// The health check sees the annotations go (it watches Machines) and
	// must still hold back: 2 unhealthy is more than 1.
	s.consistently(10*time.Second, "remediation held back while 2 of 3 are down", heldBack)
	stop()

	// One recovers: the other is replaced, the recovered one kept.
	s.setNodeReady(nodeOf(&down[0]), true)
	s.eventually(90*time.Second, "Machine "+down[1].Name+" replaced", func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(ms, func(m v1alpha1.Machine) bool { return m.Name == down[1].Name }) {
			return false, fmt.Errorf("%s is still there", down[1].Name)
		}
		if !slices.ContainsFunc(ms, func(m v1alpha1.Machine) bool { return m.Name == down[0].Name }) {
			return false, fmt.Errorf("the recovered %s was replaced too", down[0].Name)
		}
		return s.fleetIs(ms, 3, "small")
	})
	s.waitEvent(mhcName, "RemediationResumed", "")
	s.waitMetric(m, "millwright_machinehealthcheck_remediations_total", 2,
		"namespace", s.ns, "machinehealthcheck", mhcName, "mode", "owner")
	s.waitMetric(m, "millwright_machinehealthcheck_short_circuited", 0, "namespace", s.ns, "machinehealthcheck", mhcName)
	if got := s.machine(down[0].Name); got.Status.FailureReason != "" {
		t.Errorf("the recovered Machine %s has failure %q", got.Name, got.Status.FailureReason)
	}
	rec.verify()
	s.checkNoDuplicateVMs()
}

// TestPreservationWhenFailed: a Machine annotated preserve: when-failed
// whose Node stays NotReady fails and is kept — VM and Node kept, the
// Node cordoned and tainted — while a replacement takes its place; once
// the annotation is removed it is drained and deleted.
func TestPreservationWhenFailed(t *testing.T) {
	s := newScenario(t, "preserve")
	m := s.startManager("--machine-health-timeout", "5s", "--unreachable-force-drain-after", "5s")
	s.createClass("small", simSpec)
	s.createDeployment(3, "small", 1, 0)
	before := s.waitFleet(3, "small", 2*time.Minute)
	rec := s.record()

	kept := before[0]
	node := nodeOf(&kept)
	s.annotateMachine(kept.Name, v1alpha1.PreserveAnnotation, ptr.To(v1alpha1.PreserveWhenFailed))
	s.setNodeReady(node, false)
	s.eventually(90*time.Second, "Machine "+kept.Name+" Failed and preserved beside 3 Running", func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		i := slices.IndexFunc(ms, func(m v1alpha1.Machine) bool { return m.Name == kept.Name })
		if i < 0 {
			return false, fmt.Errorf("%s is gone", kept.Name)
		}
		if err := s.preserved(&ms[i]); err != nil {
			return false, err
		}
		return s.runningBeside(slices.Delete(slices.Clone(ms), i, i+1), 3)
	})
	s.waitEvent(kept.Name, "PreservationStarted", "")
	s.waitMetric(m, "millwright_machines_preserved", 1, "namespace", s.ns, "reason", "PreservedAfterFailure")

	s.annotateMachine(kept.Name, v1alpha1.PreserveAnnotation, nil)
	s.eventually(90*time.Second, "the released Machine "+kept.Name+" deleted, its VM and Node with it", func() (bool, error) {
		ms, err := s.machines()
		if err != nil {
			return false, err
		}
		if slices.ContainsFunc(ms, func(m v1alpha1.Machine) bool { return m.Name == kept.Name }) {
			return false, fmt.Errorf("%s is still there", kept.Name)
		}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: node}, &corev1.Node{}); err == nil {
			return false, fmt.Errorf("Node %s is still there", node)
		}
		return s.fleetIs(ms, 3, "small")
	})
	s.waitEvent(kept.Name, "PreservationEnded", "")
	rec.verify()
	deleted := false
	for _, d := range rec.machineDeletions {
		if d.Name == kept.Name {
			deleted = drained(d.Status.Deletion)
		}
	}
	if !deleted {
		t.Errorf("the deletion of %s was not seen to get past its drain", kept.Name)
	}
	s.checkNoDuplicateVMs()
}

// preserved checks that m is Failed and kept as docs/preservation.md
// says: condition Preserved True after the failure, its VM still in the
// sim, its Node cordoned, tainted and kept from the cluster-autoscaler.
func (s *scenario) preserved(m *v1alpha1.Machine) error {
	c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.PreservedCondition)
	switch {
	case m.DeletionTimestamp != nil:
		return fmt.Errorf("%s is being deleted", m.Name)
	case m.Status.Phase != v1alpha1.PhaseFailed:
		return fmt.Errorf("%s is %s", m.Name, m.Status.Phase)
	case c == nil || c.Status != metav1.ConditionTrue || c.Reason != "PreservedAfterFailure":
		return fmt.Errorf("%s: Preserved %+v", m.Name, c)
	}
	vms, err := s.vms()
	if err != nil {
		return err
	}
	if !slices.ContainsFunc(vms, func(vm simVM) bool { return vm.MachineName == m.Name }) {
		return fmt.Errorf("the VM of %s is gone", m.Name)
	}
	node := &corev1.Node{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Name: nodeOf(m)}, node); err != nil {
		return fmt.Errorf("Node of %s: %w", m.Name, err)
	}
	switch {
	case !node.Spec.Unschedulable:
		return fmt.Errorf("Node %s is not cordoned", node.Name)
	case !slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == v1alpha1.PreservedTaintKey && t.Effect == corev1.TaintEffectNoSchedule
	}):
		return fmt.Errorf("Node %s lacks the taint %s:NoSchedule: %v", node.Name, v1alpha1.PreservedTaintKey, node.Spec.Taints)
	case node.Annotations[v1alpha1.AutoscalerScaleDownDisabledAnnotation] != "true":
		return fmt.Errorf("Node %s lacks %s", node.Name, v1alpha1.AutoscalerScaleDownDisabledAnnotation)
	}
	return nil
}

// runningBeside checks that others, the Machines beside a preserved one,
// are replicas Running Machines with Ready Nodes, every one with its VM.
func (s *scenario) runningBeside(others []v1alpha1.Machine, replicas int) (bool, error) {
	if len(others) != replicas {
		return false, fmt.Errorf("%d Machines beside the preserved one", len(others))
	}
	vms, err := s.vms()
	if err != nil {
		return false, err
	}
	for i := range others {
		m := &others[i]
		if m.DeletionTimestamp != nil || m.Status.Phase != v1alpha1.PhaseRunning {
			return false, fmt.Errorf("Machine %s is %s (deleting %t)", m.Name, m.Status.Phase, m.DeletionTimestamp != nil)
		}
		node := &corev1.Node{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: nodeOf(m)}, node); err != nil || !nodeReady(node) {
			return false, fmt.Errorf("Node of %s not Ready (%v)", m.Name, err)
		}
		if !slices.ContainsFunc(vms, func(vm simVM) bool { return vm.MachineName == m.Name }) {
			return false, fmt.Errorf("Machine %s has no VM", m.Name)
		}
	}
	if len(vms) != replicas+1 {
		return false, fmt.Errorf("%d VMs, want %d", len(vms), replicas+1)
	}
	return true, nil
}

// untouched is an invariant: the named Machines are neither Failed nor
// being deleted nor gone.
func untouched(names ...string) check {
	return func(r *recorder) string {
		for _, name := range names {
			o, ok := r.objs[kindMachine][name]
			if !ok {
				return name + " is gone"
			}
			m := o.(*v1alpha1.Machine)
			if m.DeletionTimestamp != nil || m.Status.FailureReason != "" {
				return fmt.Sprintf("%s was remediated (failure %q, deleting %t)", name, m.Status.FailureReason, m.DeletionTimestamp != nil)
			}
		}
		return ""
	}
}

// setNodeReady makes a Node NotReady (kwok reports Ready=False while its
// VM runs on) or Ready again, through the sim's admin API.
func (s *scenario) setNodeReady(node string, ready bool) {
	s.t.Helper()
	path := "/nodes/" + node + "/not-ready"
	if ready {
		path = "/nodes/" + node + "/ready"
	}
	s.simPost(path, nil, nil)
}

// annotateMachine sets (or, with nil, removes) one annotation of a Machine.
func (s *scenario) annotateMachine(name, key string, value *string) {
	s.t.Helper()
	s.mergePatch(&v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}}, "annotations", key, value)
}

func (s *scenario) machine(name string) *v1alpha1.Machine {
	s.t.Helper()
	m := &v1alpha1.Machine{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, m); err != nil {
		s.t.Fatal(err)
	}
	return m
}

func (s *scenario) healthCheck(name string) *v1alpha1.MachineHealthCheck {
	s.t.Helper()
	mhc := &v1alpha1.MachineHealthCheck{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: name}, mhc); err != nil {
		s.t.Fatal(err)
	}
	return mhc
}

// waitEvent waits for an Event of reason about the object called name
// whose message contains text.
func (s *scenario) waitEvent(name, reason, text string) {
	s.t.Helper()
	s.eventually(30*time.Second, fmt.Sprintf("an Event %s on %s saying %q", reason, name, text), func() (bool, error) {
		events := &corev1.EventList{}
		if err := k8s.List(context.Background(), events, client.InNamespace(s.ns)); err != nil {
			return false, err
		}
		var seen []string
		for _, e := range events.Items {
			if e.InvolvedObject.Name != name {
				continue
			}
			if e.Reason == reason && strings.Contains(e.Message, text) {
				return true, nil
			}
			seen = append(seen, e.Reason+": "+e.Message)
		}
		return false, fmt.Errorf("Events on %s: %q", name, seen)
	})
}

// waitMetric waits until the manager's metric with the given label pairs
// has value want.
func (s *scenario) waitMetric(m *manager, name string, want float64, labelPairs ...string) {
	s.t.Helper()
	s.eventually(30*time.Second, fmt.Sprintf("%s%v = %g", name, labelPairs, want), func() (bool, error) {
		got, err := metricValue(m, name, labelPairs...)
		return err == nil && got == want, fmt.Errorf("%g (%v)", got, err)
	})
}

// metricValue reads one sample of a metric from the manager's /metrics
// (a metric without labels when no label pairs are given).
func metricValue(m *manager, name string, labelPairs ...string) (float64, error) {
	code, body, err := testenv.HTTPGet("http://" + m.metrics + "/metrics")
	if err != nil {
		return 0, err
	}
	if code != 200 {
		return 0, fmt.Errorf("/metrics: %d", code)
	}
lines:
	for _, line := range strings.Split(body, "\n") {
		if !strings.HasPrefix(line, name+"{") && (len(labelPairs) > 0 || !strings.HasPrefix(line, name+" ")) {
			continue
		}
		for i := 0; i+1 < len(labelPairs); i += 2 {
			if !strings.Contains(line, fmt.Sprintf("%s=%q", labelPairs[i], labelPairs[i+1])) {
				continue lines
			}
		}
		return strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
	}
	return 0, fmt.Errorf("no sample of %s%v", name, labelPairs)
}
