//go:build realkubelet

package e2e

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/logtail"
)

// The memory of the fleet scenario's two classes: the same image, the
// second a little larger, so that the rollout is a change of class.
const realKubeletMemoryB = "1152Mi"

// TestVMRealKubeletFleet proves real drains of real pods on real kubelets
// (issue #34, items 3 and 4): libvirt Machines boot the kubelet image
// (`make kubelet-image`) and join with TokenBootstrapConfig's user data,
// as in TestVMRealKubelet.
//
//  1. A MachineDeployment of 2 Machines of class kubelet-a (maxSurge 1,
//     maxUnavailable 0) reaches Running; each Node joined through the
//     kubelet's TLS bootstrap.
//  2. A Deployment "work" of 3 pods of the workload image (a readiness
//     probe, spread over the Nodes) and a PodDisruptionBudget keeping 2:
//     every pod Ready on the VMs.
//  3. A rollout to class kubelet-b drains each old Node through the
//     Eviction API: the budget refuses evictions (some old Node holds 2 of
//     the 3 pods), so the drain waits until the rescheduled pod is Ready on
//     a new VM. At every pod, Node and Machine event the recorder counts
//     the workload's Ready pods not being deleted: never fewer than 2. After
//     the rollout no pod runs on an old Node, and every pod that was bound
//     to an old Node was deleted (its DELETED event's resourceVersion)
//     before its Machine's deletion reached DeleteInfrastructure, the step
//     that deletes the VM.
//  4. The QEMU of a new VM is killed behind Millwright's and libvirt's
//     backs: its kubelet's Lease is no longer renewed, kube-controller-
//     manager's node lifecycle controller makes the Node's Ready Unknown
//     (NodeStatusUnknown, after its 50 s grace period), the Machine goes
//     Unknown, then Failed after the health timeout, and is replaced; the
//     workload has its 3 Ready pods again.
//  5. The workload is deleted and the MachineDeployment scaled to 0;
//     nothing is left; the recorder's invariants held.
//
// Figures (logged, never asserted): create → Node Ready per VM (p50 and
// max, from the Machine's creation to the recorder's first event showing
// its Node Ready), and each rollout drain: its pods and seconds from the
// step Drain to the step after it.
//
// An in-place version update is not tried: the image has one kubelet and
// nothing that answers Millwright's in-place handshake
// (docs/providers/node-images.md, "Real pods, real drains").
//
// Built only with the realkubelet tag, by `make e2e-real-kubelet-fleet`.
func TestVMRealKubeletFleet(t *testing.T) {
	const replicas = 2
	const pods, minAvailable = 3, 2
	s := newVMScenario(t, "realfleet")
	s.logConsolesOnFailure()
	// Every wait ends cleanupMargin before the test binary's -timeout, so
	// that a run too slow for it fails with its reason and still removes
	// its VMs (a timeout's panic would leave them).
	const cleanupMargin = 8 * time.Minute
	within := func(d time.Duration) time.Duration {
		if dl, ok := t.Deadline(); ok {
			return max(time.Minute, min(d, time.Until(dl)-cleanupMargin))
		}
		return d
	}
	img := filepath.Join(binDir, "kubeletimage")
	specA := s.vm.cloudImageSpec(t, img, realKubeletMemory)
	specB := s.vm.cloudImageSpec(t, img, realKubeletMemoryB)
	s.startManager("--token-bootstrap-api-server", vmAPIServer(t), "--machine-creation-timeout", "20m",
		"--machine-health-timeout", "60s", "--max-concurrent-replacements", "1",
		"--unreachable-force-drain-after", "5s",
		// The budget paces the drain: no pod deleted past it.
		"--max-evict-retries", "1000")
	s.createVMClassSpec("kubelet-a", specA)
	s.createVMClassSpec("kubelet-b", specB)
	s.createTokenBootstrapTemplate("join")

	// readyAt is when the recorder first saw each Node Ready (guarded by
	// the recorder's lock, as checks run under it).
	readyAt := map[string]time.Time{}
	rec := s.record(func(r *recorder) string {
		for _, o := range r.objs[kindNode] {
			n := o.(*corev1.Node)
			if _, ok := readyAt[n.Name]; !ok && nodeReady(n) {
				readyAt[n.Name] = time.Now()
			}
		}
		return ""
	})
	// The figures, however far the run got (a cleanup registered after
	// the scenario's runs before them).
	var oldFleet []v1alpha1.Machine
	t.Cleanup(func() {
		s.logCreateToNodeReady(rec, readyAt)
		if t.Failed() && len(oldFleet) > 0 {
			s.logDrains(rec, oldFleet)
		}
	})
	mspec := vmMachineSpec("kubelet-a", "join")
	mspec.NodeTemplate.Taints = []corev1.Taint{realKubeletTaint}
	s.createDeploymentOf(replicas, mspec, 1, 0)

	// 1. Boot and join.
	fleet := s.waitFleet(replicas, "kubelet-a", within(60*time.Minute))
	oldFleet = fleet
	s.logCreateToRunning(rec, fleet)
	s.checkJoinedThroughCSR(fleet)

	// 2. The workload and its budget.
	s.createRealWorkload(pods, minAvailable)
	s.waitWorkload(pods, within(15*time.Minute))
	t.Logf("workload Ready: %s", s.workloadPlacement())

	// 3. Roll to class kubelet-b.
	lowest := pods
	stopBudget := rec.addCheck(func(r *recorder) string {
		n := 0
		var down []string
		for _, p := range r.podsLocked() {
			if p.Labels["app"] != "work" {
				continue
			}
			if podAvailable(p) {
				n++
			} else {
				down = append(down, whyUnavailable(r, p))
			}
		}
		lowest = min(lowest, n)
		if n < minAvailable {
			slices.Sort(down)
			return fmt.Sprintf("only %d pods of the workload Ready and not being deleted, the PodDisruptionBudget keeps %d; the others: %s", n, minAvailable, strings.Join(down, "; "))
		}
		return ""
	})
	stopBounds := rec.addCheck(withinRollingBounds(replicas, 1, 0))
	rollStart := time.Now()
	s.rollTo("kubelet-b")
	rolled := s.waitFleet(replicas, "kubelet-b", within(120*time.Minute))
	stopBounds()
	s.waitWorkload(pods, within(15*time.Minute))
	rec.mu.Lock()
	stopLowest := lowest
	rec.mu.Unlock()
	stopBudget()
	t.Logf("rollout to kubelet-b: %.0fs until the workload was Ready again on the new Nodes (%s); the fewest Ready pods seen: %d (budget %d)",
		time.Since(rollStart).Seconds(), s.workloadPlacement(), stopLowest, minAvailable)
	s.logCreateToRunning(rec, rolled)
	s.checkJoinedThroughCSR(rolled)
	s.checkWorkloadOn(rolled)
	s.logDrains(rec, fleet)
	refused := s.checkDrainedBeforeVMDeleted(rec, fleet, true)
	if refused == 0 {
		t.Errorf("no eviction of the rollout's drains was refused: 3 pods on 2 old Nodes with a budget keeping 2, one drain should have waited for the budget")
	}

	// 4. A VM dies behind Millwright's back.
	victim := rolled[0]
	dom, err := s.vm.domainOf(victim.Name)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.vm.killQEMU(dom.name); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	t.Logf("killed the QEMU of %s (Machine %s, Node %s)", dom.name, victim.Name, nodeOf(&victim))
	s.eventually(within(5*time.Minute), "Node "+nodeOf(&victim)+" Unknown through the node lifecycle controller", func() (bool, error) {
		n := &corev1.Node{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Name: nodeOf(&victim)}, n); err != nil {
			return false, err
		}
		c := nodeCondition(n, corev1.NodeReady)
		if c == nil {
			return false, fmt.Errorf("no Ready condition")
		}
		return c.Status == corev1.ConditionUnknown && c.Reason == "NodeStatusUnknown", fmt.Errorf("Ready %s (%s)", c.Status, c.Reason)
	})
	t.Logf("Node %s Ready Unknown (NodeStatusUnknown) %.0fs after the kill", nodeOf(&victim), time.Since(killed).Seconds())
	s.checkLeaseStopped(nodeOf(&victim))
	s.waitKilledReplaced(rec, victim.Name, replicas, "kubelet-b", within(60*time.Minute))
	t.Logf("the killed Machine replaced %.0fs after the kill", time.Since(killed).Seconds())
	s.waitWorkload(pods, within(15*time.Minute))
	t.Logf("workload Ready again: %s", s.workloadPlacement())

	// 5. The end.
	ctx := context.Background()
	if err := k8s.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "work"}}, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Delete(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "work"}}); err != nil {
		t.Fatal(err)
	}
	s.eventually(within(5*time.Minute), "the workload's pods to be gone", func() (bool, error) {
		list := &corev1.PodList{}
		if err := k8s.List(ctx, list, client.InNamespace(s.ns)); err != nil {
			return false, err
		}
		return len(list.Items) == 0, fmt.Errorf("pods %s", podSummary(list.Items))
	})
	s.scale(0)
	s.waitFleet(0, "kubelet-b", within(15*time.Minute))
	s.waitNothingLeft()
	s.checkDrainedBeforeVMDeleted(rec, rolled, false)
	rec.verify()
}

// logConsolesOnFailure logs the last lines of every VM's console (where
// the kubelet logs) when the test fails; registered after the scenario's
// cleanups, it runs before them.
// whyUnavailable names a workload pod that is not available and why: its
// deletion, its Ready condition's reason and message, and whether its
// Node is Ready (kube-controller-manager marks the pods of a NotReady
// Node not Ready: an involuntary disruption). The recorder must be
// locked.
func whyUnavailable(r *recorder, p *corev1.Pod) string {
	why := []string{"phase " + string(p.Status.Phase)}
	if p.DeletionTimestamp != nil {
		why = append(why, "being deleted")
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			why = append(why, fmt.Sprintf("Ready=%s %s %s", c.Status, c.Reason, c.Message))
		}
	}
	if n, ok := r.objs[kindNode][p.Spec.NodeName].(*corev1.Node); ok {
		why = append(why, fmt.Sprintf("Node %s Ready=%t", n.Name, nodeReady(n)))
	} else if p.Spec.NodeName != "" {
		why = append(why, "Node "+p.Spec.NodeName+" gone")
	}
	return fmt.Sprintf("%s (%s)", p.Name, strings.Join(why, ", "))
}

func (s *scenario) logConsolesOnFailure() {
	t := s.t
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		logs, _ := filepath.Glob(filepath.Join(s.vm.consoleDir, "*-console.log"))
		for _, l := range logs {
			t.Logf("console %s, last lines:\n%s", filepath.Base(l), logtail.Tail(l, 150))
		}
	})
}

// createRealWorkload creates a Deployment "work" of the kubelet image's
// workload, replicas pods spread over the scenario's Nodes (at most one
// pod of difference between two Nodes that can take pods), Ready by their
// readiness probe, and a PodDisruptionBudget keeping minAvailable of them.
func (s *scenario) createRealWorkload(replicas, minAvailable int32) {
	s.t.Helper()
	labels := map[string]string{"app": "work"}
	honor := corev1.NodeInclusionPolicyHonor
	spec := helloPodSpec(map[string]string{"pool": s.ns})
	spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule,
		LabelSelector: &metav1.LabelSelector{MatchLabels: labels}, NodeTaintsPolicy: &honor,
	}}
	s.create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: s.ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: spec},
		},
	})
	min := intstr.FromInt32(minAvailable)
	s.create(&policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "work", Namespace: s.ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &min, Selector: &metav1.LabelSelector{MatchLabels: labels}},
	})
}

// workloadPlacement says which Node each pod of the workload runs on.
func (s *scenario) workloadPlacement() string {
	list := &corev1.PodList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(s.ns), client.MatchingLabels{"app": "work"}); err != nil {
		return err.Error()
	}
	var out []string
	for _, p := range list.Items {
		out = append(out, fmt.Sprintf("%s on %s at %s", p.Name, p.Spec.NodeName, p.Status.PodIP))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// checkWorkloadOn: every pod of the workload runs on a Node of ms.
func (s *scenario) checkWorkloadOn(ms []v1alpha1.Machine) {
	s.t.Helper()
	list := &corev1.PodList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(s.ns), client.MatchingLabels{"app": "work"}); err != nil {
		s.t.Fatal(err)
	}
	for _, p := range list.Items {
		if !slices.ContainsFunc(ms, func(m v1alpha1.Machine) bool { return nodeOf(&m) == p.Spec.NodeName }) {
			s.t.Errorf("pod %s runs on %s, not on a Node of the new Machines", p.Name, p.Spec.NodeName)
		}
	}
}

// checkDrainedBeforeVMDeleted: every pod bound to the Node of a Machine of
// ms was deleted (the resourceVersion of its DELETED event) before the
// Machine's deletion reached DeleteInfrastructure, the step that deletes
// the VM, and the Machine is gone. With withPods, each Node must have had
// a pod (else the check proves nothing), and it returns how many of the
// drains had an eviction refused (status.deletion.drain.lastRefusedTime).
func (s *scenario) checkDrainedBeforeVMDeleted(rec *recorder, ms []v1alpha1.Machine, withPods bool) (refused int) {
	t := s.t
	t.Helper()
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, m := range ms {
		node := nodeOf(&m)
		if _, live := rec.objs[kindMachine][m.Name]; live {
			t.Errorf("Machine %s is not deleted", m.Name)
			continue
		}
		d := rec.drainOfLocked(m.Name, node)
		if d.infraRV == 0 {
			t.Errorf("Machine %s was never seen at the step %s", m.Name, v1alpha1.StepDeleteInfrastructure)
			continue
		}
		for _, pd := range rec.podDeletions {
			if pd.pod.Spec.NodeName == node && pd.rv > d.infraRV {
				t.Errorf("pod %s on Node %s was deleted at rv %d, after Machine %s reached %s at rv %d: the VM went before its pod", pd.pod.Name, node, pd.rv, m.Name, v1alpha1.StepDeleteInfrastructure, d.infraRV)
			}
		}
		for _, p := range rec.podsLocked() {
			if p.Spec.NodeName == node {
				t.Errorf("pod %s is still bound to Node %s of the deleted Machine %s", p.Name, node, m.Name)
			}
		}
		if withPods && d.pods == 0 {
			t.Errorf("no pod was ever deleted from Node %s of Machine %s: the check that its pods went before its VM proves nothing", node, m.Name)
		}
		if d.refused {
			refused++
		}
	}
	return refused
}

// drainFigures is what the recorder saw of a Machine's drain.
type drainFigures struct {
	// infraRV is the resourceVersion of the first version at the step
	// DeleteInfrastructure or later (0: never seen).
	infraRV int64
	// start and end: the first versions seen at the step Drain and past it.
	start, end time.Time
	// refused: an eviction was refused (lastRefusedTime set).
	refused bool
	// pods: the pods bound to its Node deleted.
	pods int
}

// drainOfLocked returns the drain figures of Machine name, whose Node is
// node; the recorder must be locked.
func (r *recorder) drainOfLocked(name, node string) drainFigures {
	var f drainFigures
	for _, v := range r.versions[name] {
		d := v.deletion
		if d == nil {
			continue
		}
		if d.Step == v1alpha1.StepDrain && f.start.IsZero() {
			f.start = v.seen
		}
		if d.Drain != nil && d.Drain.LastRefusedTime != nil {
			f.refused = true
		}
		if drained(d) && f.end.IsZero() {
			f.end = v.seen
		}
		if (d.Step == v1alpha1.StepDeleteInfrastructure || d.Step == v1alpha1.StepDeleteNode) && f.infraRV == 0 {
			f.infraRV = v.rv
		}
	}
	for _, pd := range r.podDeletions {
		if pd.pod.Spec.NodeName == node && (f.infraRV == 0 || pd.rv < f.infraRV) {
			f.pods++
		}
	}
	return f
}

// logDrains logs, for each Machine of ms whose drain the recorder saw
// start, its Node's pods deleted and the drain's seconds, from the first
// event showing the step Drain to the first showing a later step.
func (s *scenario) logDrains(rec *recorder, ms []v1alpha1.Machine) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	for _, m := range ms {
		node := nodeOf(&m)
		d := rec.drainOfLocked(m.Name, node)
		switch {
		case d.start.IsZero():
		case d.end.IsZero():
			s.t.Logf("drain of Node %s: %d pods deleted so far, not finished after %.0fs (an eviction refused by the budget: %v)", node, d.pods, time.Since(d.start).Seconds(), d.refused)
		default:
			s.t.Logf("drain of Node %s with %d pods: %.1fs (an eviction refused by the budget: %v)", node, d.pods, d.end.Sub(d.start).Seconds(), d.refused)
		}
	}
}

// checkLeaseStopped: the Node's Lease in kube-node-lease, renewed by its
// kubelet every 10 s while it lives, is not renewed for 25 s.
func (s *scenario) checkLeaseStopped(node string) {
	s.t.Helper()
	get := func() *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: corev1.NamespaceNodeLease, Name: node}, l); err != nil {
			s.t.Fatalf("the Lease of Node %s: %v", node, err)
		}
		return l
	}
	before := get()
	time.Sleep(25 * time.Second)
	after := get()
	if after.ResourceVersion != before.ResourceVersion {
		s.t.Errorf("the Lease of the killed Node %s was renewed: renewTime %v, then %v", node, before.Spec.RenewTime, after.Spec.RenewTime)
	}
	holder := ptr.Deref(after.Spec.HolderIdentity, "")
	s.t.Logf("the Lease of Node %s (holder %s) last renewed at %v (the guest's clock), not since", node, holder, after.Spec.RenewTime)
}

// logCreateToNodeReady logs, for every Machine the recorder saw with a
// Node, the seconds from its creation to the first event showing its Node
// Ready, and their p50 and max.
func (s *scenario) logCreateToNodeReady(rec *recorder, readyAt map[string]time.Time) {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var secs []float64
	var each []string
	for name, vs := range rec.versions {
		var node string
		var created time.Time
		for _, v := range vs {
			if v.node != "" {
				node = v.node
			}
		}
		if o, ok := rec.objs[kindMachine][name]; ok {
			created = o.GetCreationTimestamp().Time
		} else {
			for _, m := range rec.machineDeletions {
				if m.Name == name {
					created = m.CreationTimestamp.Time
				}
			}
		}
		at, ok := readyAt[node]
		if node == "" || created.IsZero() || !ok {
			continue
		}
		secs = append(secs, at.Sub(created).Seconds())
		each = append(each, fmt.Sprintf("%s %.0fs", name, at.Sub(created).Seconds()))
	}
	if len(secs) == 0 {
		s.t.Errorf("no Machine seen with a Ready Node")
		return
	}
	sort.Float64s(secs)
	sort.Strings(each)
	s.t.Logf("create → Node Ready (real kubelet, TCG) for %d VMs: p50 %.0fs, max %.0fs (%s)", len(secs), secs[(len(secs)-1)/2], secs[len(secs)-1], strings.Join(each, ", "))
}
