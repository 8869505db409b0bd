package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	awssdk "github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/localcluster"
	"github.com/millwright-dev/millwright/internal/motoserver"
	"github.com/millwright-dev/millwright/internal/provider/aws"
	"github.com/millwright-dev/millwright/internal/provider/sim"
)

// The chaos run (docs/reliability.md): one seeded sequence of faults and
// workload steps, interleaved, for as long as asked.
const (
	chaosLease       = 4 * time.Second
	chaosConvergence = 5 * time.Minute // every Machine converges within this after the last fault
	// chaosCreateLimit is the sim classes' maxConcurrentCreates.
	chaosCreateLimit int32 = 2
)

// chaosFault is one kind of fault the run injects.
type chaosFault string

const (
	faultKillManager   chaosFault = "kill-manager"   // SIGKILL one replica, started again at once
	faultPauseManager  chaosFault = "pause-manager"  // SIGSTOP one replica past its lease, then SIGCONT
	faultKillDriver    chaosFault = "kill-driver"    // SIGKILL the sim, started again at once
	faultKillAPIServer chaosFault = "kill-apiserver" // SIGKILL kube-apiserver, started again 1–3 s later
	// The vm target's own.
	faultRestartLibvirtd chaosFault = "restart-libvirtd" // SIGTERM libvirtd and start it again
	faultKillRelay       chaosFault = "kill-relay"       // SIGKILL one relay of a VM's connection to the API server
)

// chaosStep is one workload step the run takes between faults.
type chaosStep string

const (
	stepScale    chaosStep = "scale"     // replicas to 2..6 (1..3 VMs)
	stepRoll     chaosStep = "roll"      // to the other class
	stepKillVM   chaosStep = "kill-vm"   // a VM without workload pods stopped: its Machine is replaced
	stepZoneFull chaosStep = "zone-full" // local-b out of capacity
	stepZoneBack chaosStep = "zone-back" // local-b has capacity again
	stepNothing  chaosStep = "nothing"   // let the system work
	stepMark     chaosStep = "mark"      // another controller's annotation, label and condition on a Machine
	// The sim's and aws's own: a Machine kept (preserve: now) and let go.
	stepPreserve   chaosStep = "preserve"
	stepUnpreserve chaosStep = "unpreserve"
	// The sim's and aws's own: the InPlace strategy to another class,
	// taken in place (tags) or refused and replaced (another instance
	// type).
	stepInPlace chaosStep = "in-place"
	// The vm target's own: a running VM's network link set down for good,
	// a Node cut off from the API server while its VM runs (the
	// split-brain case): its Machine is replaced, and its volumes must
	// stay attached until its VM is gone (chaosvolumes_test.go).
	stepCutVM chaosStep = "cut-vm"
)

// chaosRolls and chaosInPlace say which class a roll and an in-place
// update go to from each class; chaosTagged is small's VMs tagged.
var (
	chaosRolls   = map[string]string{"small": "large", "large": "small", "tagged": "large"}
	chaosInPlace = map[string]string{"small": "tagged", "tagged": "small", "large": "small"}
)

const chaosTagged = `{"region":"local","zones":["local-a","local-b"],"bootDelay":"1s","bootJitter":"1s","tags":{"chaos":"in-place"}}`

// chaosRun is the state of one run: the scenario, its two leader-elected
// managers, the seeded source and what was done.
type chaosRun struct {
	s        *scenario
	managers []*manager
	rng      *rand.Rand
	start    time.Time
	faults   map[chaosFault]int
	steps    map[chaosStep]int
	replicas int32
	class    string
	// budget is the workload's PodDisruptionBudget check (nil on vm), and
	// fates its sound one.
	budget *outageBudget
	fates  *podFates
	// marks are what another controller wrote on Machines.
	marks *foreignMarks
	// preserved are the Machines the run asked to keep (not on vm).
	preserved *chaosPreserved
	// minFleet and maxFleet bound the replicas a scale step picks.
	minFleet, maxFleet int
	zoneFull           bool
	// zoneFault is the proxy's fault that makes a zone full (aws).
	zoneFault *motoserver.Fault
}

// chaosSettings reads CHAOS_TARGET (sim, aws, vm, or several
// comma-separated; sim,aws by default: the vm target runs real VMs, as
// root, and runs in `make test` as TestChaosVM), CHAOS_DURATION (45 s a
// target by default: the short run of `make test`, with seed 1) and
// CHAOS_SEED (or E2E_SEED).
func chaosSettings(t *testing.T) (targets []string, duration time.Duration, seed uint64) {
	t.Helper()
	targets = []string{"sim", "aws"}
	if v := os.Getenv("CHAOS_TARGET"); v != "" {
		targets = strings.Split(v, ",")
	}
	for _, target := range targets {
		if target != "sim" && target != "aws" && target != "vm" {
			t.Fatalf("CHAOS_TARGET=%s: want sim, aws or vm, or several comma-separated (docs/reliability.md)", target)
		}
	}
	// The short run of `make test` replays one sequence (seed 1): the
	// long runs of `make chaos` draw theirs, to find what it does not.
	duration, seed = 45*time.Second, 1
	if v := os.Getenv("CHAOS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			t.Fatalf("CHAOS_DURATION=%q: want a duration such as 30m", v)
		}
		duration, seed = d, uint64(time.Now().UnixNano())
	}
	for _, k := range []string{"CHAOS_SEED", "E2E_SEED"} {
		if v := os.Getenv(k); v != "" {
			if _, err := fmt.Sscan(v, &seed); err != nil {
				t.Fatalf("%s=%q: %v", k, v, err)
			}
			break
		}
	}
	t.Logf("chaos: targets %v, seed %d (CHAOS_SEED=%d replays the sequence), %s each", targets, seed, seed, duration)
	return targets, duration, seed
}

// TestChaos runs the chaos of docs/reliability.md on the sim and on
// millwright-aws against moto: for CHAOS_DURATION (45 s each in `make
// test`), a seeded mix of SIGKILLed and SIGSTOPped managers (a
// leader-elected pair), a SIGKILLed driver and kube-apiserver,
// interleaved with scale-ups and downs, rollouts back and forth, in-place
// updates (sim), Machines preserved and let go, VMs stopped (instances
// terminated) behind Millwright's back and a zone out of capacity, under
// a workload whose PodDisruptionBudget must hold. At every event the
// recorder sees, the budgets hold and no preserved Machine is deleted;
// every 0.5 s, no Machine has two live VMs. After the faults stop, the
// fleet converges within 5 minutes with exactly its VMs, no Machine ever
// had two VMs, no Machine vanished without its deletion steps, no Node
// was deleted before its drain finished, and the leading manager's
// goroutines and heap come back to their level after rounds of faults it
// survives (chaossoak_test.go).
func TestChaos(t *testing.T) {
	targets, duration, seed := chaosSettings(t)
	for _, target := range targets {
		t.Run(target, func(t *testing.T) { runChaos(t, target, duration, seed) })
	}
}

// runChaos is TestChaos on one target.
func runChaos(t *testing.T, target string, duration time.Duration, seed uint64) {
	le := []string{"--leader-elect", "--leader-elect-lease-duration", chaosLease.String(),
		"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "1s",
		// A VM stopped before its Node was ever Ready fails at the creation
		// timeout: short enough for the convergence bound.
		"--machine-health-timeout", "20s", "--machine-creation-timeout", "2m"}
	run := &chaosRun{rng: rand.New(rand.NewPCG(seed, seed)), faults: map[chaosFault]int{}, steps: map[chaosStep]int{},
		replicas: 3, class: "small", minFleet: 2, maxFleet: 6}
	var s *scenario
	switch target {
	case "aws":
		s = newAWSScenario(t, "chaosaws")
		s.createAWSClass("small", s.aws.awsSpec())
		s.createAWSClass("large", strings.Replace(s.aws.awsSpec(), `"t3.micro"`, `"t3.small"`, 1))
		s.createAWSClass("tagged", strings.TrimSuffix(s.aws.awsSpec(), "}")+`,"tags":{"chaos":"in-place"}}`)
	case "vm":
		// Real VMs under TCG on two cores: a small fleet, no workload
		// (the node agent runs no pods), libvirtd restarted by this process.
		if err := daemons.CanRestartLibvirtd(); err != nil {
			t.Fatalf("FAIL: the vm target restarts libvirtd: %v", err)
		}
		s = newVMScenario(t, "chaosvm")
		le = append(le, "--token-bootstrap-api-server", vmAPIServer(t))
		s.createVMClass("small", smallVM)
		s.createVMClass("large", largeVM)
		s.createTokenBootstrapTemplate("join")
		run.replicas, run.minFleet, run.maxFleet = 2, 1, 3
	default:
		s = newScenario(t, "chaos")
		// A class create limit, checked at the end from the sim's count
		// of CreateMachine calls in flight.
		limit := func(c *v1alpha1.MachineClass) { c.Spec.MaxConcurrentCreates = ptr.To(chaosCreateLimit) }
		s.createClassWith("small", simSpec, limit)
		s.createClassWith("large", largeSpec, limit)
		s.createClassWith("tagged", chaosTagged, limit)
	}
	run.s = s
	run.managers = []*manager{s.startManager(le...), s.startManager(le...)}
	if s.vm != nil {
		s.createDeploymentOf(run.replicas, vmMachineSpec("small", "join"), 1, 0)
		s.waitFleet(int(run.replicas), "small", 8*time.Minute)
	} else {
		s.createDeployment(run.replicas, "small", 1, 0)
		s.waitFleet(int(run.replicas), "small", 2*time.Minute)
	}
	rec := s.record()
	if s.vm == nil {
		s.createWorkload(4, 3)
		run.budget = &outageBudget{min: 3, replicas: 4}
		rec.addCheck(run.budget.check())
		run.fates = newPodFates()
		rec.addCheck(run.fates.check())
	}
	s.create(&v1alpha1.MachineDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "chaos", Namespace: s.ns},
		Spec: v1alpha1.MachineDisruptionBudgetSpec{Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": s.ns}},
			MaxUnavailable: intstr.FromInt32(1)},
	})
	// A health check over the pool beside each Machine's own health
	// timeout: whichever sees a NotReady Node for 20 s first has the
	// Machine replaced (a remediation, under the budget above).
	unhealthyFor := metav1.Duration{Duration: 20 * time.Second}
	s.create(&v1alpha1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: "chaos", Namespace: s.ns},
		Spec: v1alpha1.MachineHealthCheckSpec{
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"pool": s.ns}},
			Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
				{Type: string(corev1.NodeReady), Status: string(corev1.ConditionFalse), Timeout: unhealthyFor},
				{Type: string(corev1.NodeReady), Status: string(corev1.ConditionUnknown), Timeout: unhealthyFor},
			}},
		},
	})
	var voluntary voluntaryCount
	rec.addCheck(voluntaryAtMost(1, &voluntary))
	run.marks = newForeignMarks()
	rec.addCheck(run.marks.kept())
	if s.vm == nil {
		run.preserved = &chaosPreserved{}
		rec.addCheck(run.preserved.kept())
	}
	vms := s.watchVMs()
	volumes := s.attachVolumes()

	run.start = time.Now()
	run.do(stepMark) // at least one Machine carries another controller's marks in every run
	if run.preserved != nil {
		run.do(stepPreserve) // and one is kept
	}
	for time.Since(run.start) < duration {
		if run.rng.IntN(3) == 0 {
			run.step()
		} else {
			run.fault()
		}
		run.heal()
		time.Sleep(time.Duration(500+run.rng.IntN(2500)) * time.Millisecond)
	}
	if run.zoneFull {
		run.do(stepZoneBack)
	}
	if run.preserved != nil {
		run.do(stepUnpreserve) // a kept Machine is not one of the replicas
	}
	lastFault := time.Now()
	bound := chaosConvergence
	if s.vm != nil {
		bound *= 2 // VMs boot under TCG
	}
	// Not converging is a failure, but the invariants and the summary
	// still say what happened.
	if err := s.converges(int(run.replicas), run.class, bound); err != nil {
		t.Errorf("no convergence within %s after the last fault: %v\n%s%s", bound, err, s.describeMachines(), s.describeOwners())
		if s.vm == nil {
			t.Logf("the workload:\n%s", s.describeWorkload())
		}
	} else if s.vm == nil {
		if _, err := s.workloadAvailable(4, chaosConvergence); err != nil {
			t.Errorf("the workload's 4 pods not available within %s after the fleet converged: %v\n%s", chaosConvergence, err, s.describeWorkload())
		}
	}
	converged := time.Since(lastFault)
	if s.vm == nil && !t.Failed() {
		run.soak(3+int(duration/(5*time.Minute)), chaosConvergence)
	}
	twice := vms.stop()
	attached, released, early := volumes.stop(rec, vms)
	twice = append(twice, early...)
	rec.verify()
	run.marks.verify(t, s.ns)
	created, deleted := s.checkOneVMEach()
	if s.aws == nil && s.vm == nil {
		for _, class := range []string{"small", "large"} {
			if st := s.callStats(class); st.MaxCreates > int(chaosCreateLimit) {
				t.Errorf("class %s had %d creates in flight at once, more than its maxConcurrentCreates %d", class, st.MaxCreates, chaosCreateLimit)
			}
		}
	}

	seen := len(rec.machineNames())
	preservedCount := 0
	if run.preserved != nil {
		preservedCount = run.preserved.count()
	}
	// The checks write voluntary: read it under the recorder's lock.
	rec.mu.Lock()
	checks, violations, disrupted, hidden, gapEvents, gapReads := rec.checksRun, len(rec.violations), voluntary.max, rec.hidden, rec.gapEvents, rec.gapReads
	rec.mu.Unlock()
	skipped, fates := 0, "no workload"
	if run.budget != nil {
		run.budget.mu.Lock()
		skipped = run.budget.suspended
		run.budget.mu.Unlock()
		fates = run.fates.String()
	}
	t.Logf("chaos summary: target %s, seed %d, %s of faults; faults %s; workload steps %s; in-place updates ended (Machines) %s; Machines failed, by reason, %s; Machines seen %d, VMs created %d and deleted %d; invariant checks %d (recorder; %d pod-count checks skipped in outages; %d versions read back from etcd in %d reads after broken watches; %d deletions out of its sight, not judged) + %d (VM polls); VolumeAttachments attached %d, released %d; violations %d + %d; most Machines voluntarily disrupted at once %d (budget 1); Machines marked by another controller %d, kept (preserve: now) %d; %s; converged %.1fs after the last fault",
		target, seed, duration, counts(run.faults), counts(run.steps), counts(rec.inPlaceEnds()), counts(rec.failures()), seen, created, deleted, checks, skipped, gapEvents, gapReads, hidden, vms.polls, attached, released, violations, len(twice), disrupted, run.marks.count(), preservedCount, fates, converged.Seconds())
	for _, v := range twice {
		t.Errorf("invariant violated: %s", v)
	}
	if s.vm != nil {
		// No VM, volume, QEMU process or relay outlives its Machine.
		s.scale(0)
		s.waitFleet(0, run.class, bound)
		s.waitNothingLeft()
	}
}

// converges waits until the fleet is replicas Running Machines of class
// with exactly their VMs, as waitFleet, and says why not after bound.
func (s *scenario) converges(replicas int, class string, bound time.Duration) error {
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, bound, true, func(context.Context) (bool, error) {
		ms, err := s.machines()
		if err != nil {
			last = err
			return false, nil
		}
		ok, err := s.fleetIs(ms, replicas, class)
		last = err
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("%w (last: %v)", err, last)
	}
	return nil
}

// counts prints a tally sorted by key.
func counts[K ~string](m map[K]int) string {
	var parts []string
	for k, n := range m {
		parts = append(parts, fmt.Sprintf("%s=%d", k, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// note logs what the run does, with its time since the start, so that a
// failure says what happened just before it.
func (r *chaosRun) note(format string, args ...any) {
	r.s.t.Log(fmt.Sprintf("chaos +%.1fs: ", time.Since(r.start).Seconds()) + fmt.Sprintf(format, args...))
}

// fault injects one fault drawn from the seeded source.
func (r *chaosRun) fault() {
	t := r.s.t
	t.Helper()
	var f chaosFault
	switch n := r.rng.IntN(20); {
	case n < 10:
		f = faultKillManager
	case n < 13:
		f = faultPauseManager
	case n < 17:
		f = faultKillDriver
	case r.s.vm != nil && n < 18:
		f = faultRestartLibvirtd
	case r.s.vm != nil && n < 19:
		f = faultKillRelay
	default:
		f = faultKillAPIServer
	}
	m := r.managers[r.rng.IntN(len(r.managers))]
	r.faults[f]++
	r.heal() // a manager that exited after the last fault is running again
	switch f {
	case faultKillManager:
		r.note("SIGKILL %s and start it again", m.name)
		if err := r.s.crashAndRestart(m); err != nil {
			t.Fatalf("chaos: %v", err)
		}
	case faultPauseManager:
		pause := chaosLease + time.Duration(r.rng.IntN(3000))*time.Millisecond
		r.note("SIGSTOP %s for %s (past its %s lease), then SIGCONT", m.name, pause, chaosLease)
		pid, ok := cluster.PIDs()[m.name]
		if !ok {
			t.Fatalf("chaos: %s is not running", m.name)
		}
		if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
			r.note("SIGSTOP %s: %v (it has just exited)", m.name, err)
			return
		}
		time.Sleep(pause)
		if err := syscall.Kill(pid, syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	case faultKillDriver:
		r.note("SIGKILL %s and start it again", r.s.driver)
		if err := r.s.crashAndRestartDriver(); err != nil {
			t.Fatalf("chaos: %v", err)
		}
	case faultRestartLibvirtd:
		r.note("restart libvirtd (SIGTERM, as a service manager does; its QEMUs keep running)")
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := daemons.RestartLibvirtd(ctx); err != nil {
			t.Fatalf("chaos: restarting libvirtd: %v", err)
		}
		if err := r.s.vm.connect(); err != nil {
			t.Fatalf("chaos: reconnecting to libvirtd: %v", err)
		}
	case faultKillRelay:
		relays := relayProcesses()
		if len(relays) == 0 {
			r.note("SIGKILL a VM's relay to the API server: none runs")
			return
		}
		slices.Sort(relays)
		pid := relays[r.rng.IntN(len(relays))]
		r.note("SIGKILL relay pid %d: its VM's connection to the API server breaks while the VM runs", pid)
		_ = syscall.Kill(pid, syscall.SIGKILL) // it may have ended with its connection
	case faultKillAPIServer:
		down := time.Duration(1000+r.rng.IntN(2000)) * time.Millisecond
		r.note("SIGKILL kube-apiserver, start it again after %s", down)
		if r.budget != nil {
			r.budget.apiServerKilled()
		}
		pid, ok := cluster.PIDs()[localcluster.APIServer]
		if !ok {
			t.Fatal("chaos: kube-apiserver is not running")
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := cluster.StopComponent(localcluster.APIServer); err != nil {
			t.Fatal(err)
		}
		time.Sleep(down)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		if err := cluster.StartComponent(ctx, localcluster.APIServer); err != nil {
			t.Fatalf("chaos: kube-apiserver did not come back: %v", err)
		}
	}
}

// heal starts again a manager that exited: one that lost its lease while
// stopped exits on purpose, as controller-runtime does.
func (r *chaosRun) heal() {
	for _, m := range r.managers {
		if exited, err := cluster.ProcessExited(m.name); exited {
			r.note("%s had exited (%v); starting it again", m.name, err)
			if err := cluster.StopProcess(m.name); err != nil {
				r.s.t.Fatal(err)
			}
			r.s.start(m.name, "millwright-manager", m.args)
		}
	}
}

// step takes one workload step drawn from the seeded source.
func (r *chaosRun) step() {
	steps := []chaosStep{stepScale, stepScale, stepRoll, stepKillVM, stepNothing, stepMark}
	if r.preserved != nil {
		steps = append(steps, stepPreserve, stepUnpreserve)
	}
	if r.s.vm == nil {
		steps = append(steps, stepInPlace)
	}
	switch {
	case r.s.vm != nil: // one zone
		steps = append(steps, stepCutVM)
	case r.zoneFull:
		steps = append(steps, stepZoneBack)
	default:
		steps = append(steps, stepZoneFull)
	}
	r.do(steps[r.rng.IntN(len(steps))])
}

func (r *chaosRun) do(step chaosStep) {
	s := r.s
	s.t.Helper()
	r.steps[step]++
	switch step {
	case stepScale:
		r.replicas = int32(r.minFleet + r.rng.IntN(r.maxFleet-r.minFleet+1))
		r.note("scale to %d", r.replicas)
		s.scale(r.replicas)
	case stepRoll:
		r.class = chaosRolls[r.class]
		r.note("roll to class %s", r.class)
		s.updateDeployment(func(md *v1alpha1.MachineDeployment) {
			md.Spec.Strategy = rollingStrategy(1, 0)
			md.Spec.Template.Spec.Class.Name = r.class
		})
	case stepInPlace:
		r.class = chaosInPlace[r.class]
		r.note("update in place to class %s", r.class)
		s.updateDeployment(func(md *v1alpha1.MachineDeployment) {
			md.Spec.Strategy = inPlaceStrategy(v1alpha1.InPlaceAuto, 0)
			md.Spec.Template.Spec.Class.Name = r.class
		})
	case stepPreserve:
		r.note("%s", r.preserved.preserve(s, r.rng.IntN))
	case stepUnpreserve:
		r.note("%s", r.preserved.release(s))
	case stepKillVM:
		r.onIdleVM("stop VM %s of Machine %s behind Millwright's back", r.stopVM)
	case stepCutVM:
		r.onIdleVM("cut VM %s of Machine %s off the network for good (its link down), while it runs",
			func(id string) error { return s.vm.setLink(id, false) })
	case stepZoneFull, stepZoneBack:
		r.note("%s: a zone out of capacity, or back", step)
		r.zone(step == stepZoneFull)
	case stepNothing:
		r.note("nothing")
	case stepMark:
		ms, err := s.machines()
		var live []string
		for _, m := range ms {
			if m.DeletionTimestamp.IsZero() {
				live = append(live, m.Name)
			}
		}
		if err != nil || len(live) == 0 {
			r.note("mark a Machine as another controller would: none to mark (%v)", err)
			return
		}
		slices.Sort(live)
		name := live[r.rng.IntN(len(live))]
		r.note("mark Machine %s with another controller's annotation, label and condition", name)
		if err := r.marks.mark(s.ns, name); err != nil {
			r.note("marking %s: %v", name, err)
		}
	}
}

// onIdleVM does act to an idle VM (idleVM), noted as what says with the
// VM's ID and its Machine's name.
func (r *chaosRun) onIdleVM(what string, act func(id string) error) {
	id, machine := r.idleVM()
	if id == "" {
		r.note("%s: no running VM with a Node free of workload pods", strings.Fields(what)[0])
		return
	}
	r.note(what, id, machine)
	if err := act(id); err != nil {
		r.note("VM %s: %v", id, err)
	}
}

// idleVM picks, by the seeded source, the VM of a Running Machine whose
// Node runs no workload pod: stopping it is a health remediation, not a
// disruption of the workload the budget protects.
func (r *chaosRun) idleVM() (id, machine string) {
	busy := map[string]bool{}
	for _, p := range r.s.workloadPods() {
		busy[p.Spec.NodeName] = true
	}
	vms, err := r.s.vms()
	if err != nil {
		return "", ""
	}
	var idle []sim.VM
	for _, vm := range vms {
		if vm.State == sim.VMRunning && vm.NodeName != "" && !busy[vm.NodeName] {
			idle = append(idle, vm)
		}
	}
	if len(idle) == 0 {
		return "", ""
	}
	slices.SortFunc(idle, func(a, b sim.VM) int { return strings.Compare(a.ID, b.ID) })
	vm := idle[r.rng.IntN(len(idle))]
	return vm.ID, vm.MachineName
}

// stopVM stops a VM behind Millwright's back: the sim's stops, an EC2
// instance is terminated, a libvirt VM's QEMU is SIGKILLed.
func (r *chaosRun) stopVM(id string) error {
	if w := r.s.aws; w != nil {
		_, err := w.ec2.TerminateInstances(context.Background(), &ec2.TerminateInstancesInput{InstanceIds: []string{id}})
		return err
	}
	if w := r.s.vm; w != nil {
		return w.killQEMU(id)
	}
	return r.simPost("/vms/" + id + "/kill")
}

// zone makes the second zone refuse every create for capacity (full), or
// lets it create again: the sim's admin API, or EC2's
// InsufficientInstanceCapacity from the proxy in front of moto.
func (r *chaosRun) zone(full bool) {
	s := r.s
	s.t.Helper()
	r.zoneFull = full
	if w := s.aws; w != nil {
		if full {
			r.zoneFault = w.proxy.Fail(&motoserver.Fault{Action: "RunInstances", Match: map[string]string{"SubnetId": w.subnets[awsZones[1]]},
				Code: "InsufficientInstanceCapacity"})
		} else if r.zoneFault != nil {
			w.proxy.Remove(r.zoneFault)
		}
		return
	}
	path := map[bool]string{true: "/zones/local-b/out-of-capacity", false: "/zones/local-b/capacity"}[full]
	s.eventually(time.Minute, "the sim to take "+path, func() (bool, error) {
		err := r.simPost(path)
		return err == nil, err
	})
}

// checkOneVMEach fails the test for every Machine that ever had two VMs
// (the sim's history; every instance moto knows, terminated ones too,
// by its Machine UID tag) and returns how many VMs were created and
// deleted since the scenario began.
func (s *scenario) checkOneVMEach() (created, deleted int) {
	s.t.Helper()
	if w := s.aws; w != nil {
		ins, err := w.instances(w.cluster)
		if err != nil {
			s.t.Fatalf("listing moto's instances: %v", err)
		}
		byUID := map[string][]string{}
		for _, in := range ins {
			id := awssdk.ToString(in.InstanceId)
			byUID[tagOf(in, aws.TagMachineUID)] = append(byUID[tagOf(in, aws.TagMachineUID)], id)
			if !live(in) {
				deleted++
			}
		}
		for uid, ids := range byUID {
			if len(ids) > 1 {
				s.t.Errorf("the Machine with UID %q had %d instances: %v", uid, len(ids), ids)
			}
		}
		return len(ins), deleted
	}
	if s.vm != nil {
		// libvirt keeps no history: the polls of live domains are the check.
		doms, err := s.vm.domains()
		if err != nil {
			s.t.Fatalf("listing the domains: %v", err)
		}
		return len(doms), 0
	}
	hist := s.checkNoDuplicateVMs()
	for _, h := range hist {
		if h.DeletedAt != nil {
			deleted++
		}
	}
	return len(hist), deleted
}

// simPost posts to the sim's admin API and returns what went wrong: the
// sim may be down for a moment.
func (r *chaosRun) simPost(path string) error {
	c := http.Client{Timeout: 10 * time.Second}
	resp, err := c.Post("http://"+r.s.simAdmin+path, "application/json", bytes.NewReader(nil))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		var e sim.AdminError
		_ = json.NewDecoder(resp.Body).Decode(&e)
		return fmt.Errorf("POST %s: %d %s", path, resp.StatusCode, e.Error)
	}
	return nil
}

// vmWatch polls the target's VMs and records every time a Machine had
// two live VMs at once, and when each Machine's VM was last seen.
type vmWatch struct {
	stopc chan struct{}
	done  sync.WaitGroup
	mu    sync.Mutex
	polls int
	twice []string
	// lastSeen is, by Machine, when the last poll that listed its VM
	// began.
	lastSeen map[string]time.Time
}

func (s *scenario) watchVMs() *vmWatch {
	w := &vmWatch{stopc: make(chan struct{}), lastSeen: map[string]time.Time{}}
	w.done.Add(1)
	go func() {
		defer w.done.Done()
		for {
			select {
			case <-w.stopc:
				return
			case <-time.After(500 * time.Millisecond):
			}
			began := time.Now()
			vms, err := s.vms()
			if err != nil {
				continue // the sim is down for a moment
			}
			byMachine := map[string][]string{}
			for _, vm := range vms {
				if !vm.Orphan {
					byMachine[vm.MachineName] = append(byMachine[vm.MachineName], vm.ID)
				}
			}
			w.mu.Lock()
			w.polls++
			for name := range byMachine {
				w.lastSeen[name] = began
			}
			for name, ids := range byMachine {
				if len(ids) > 1 && len(w.twice) < 50 {
					w.twice = append(w.twice, fmt.Sprintf("Machine %s had %d live VMs at once: %v", name, len(ids), ids))
				}
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// stop ends the polls and returns the violations seen.
func (w *vmWatch) stop() []string {
	close(w.stopc)
	w.done.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.twice
}

// workloadPods lists the workload's pods (createWorkload).
func (s *scenario) workloadPods() []corev1.Pod {
	pods := &corev1.PodList{}
	if err := k8s.List(context.Background(), pods, client.InNamespace(s.ns), client.MatchingLabels{"app": "work"}); err != nil {
		return nil
	}
	return pods.Items
}

// TestChaosVM is TestChaos's vm target, in `make test` (as root): real
// VMs under libvirt, with libvirtd restarted, QEMUs killed behind
// libvirt's back and relays of VMs' connections to the API server killed
// besides the faults of every target. CHAOS_DURATION applies; CHAOS_TARGET
// does not (`make chaos CHAOS_TARGET=vm` runs it through TestChaos).
func TestChaosVM(t *testing.T) {
	_, duration, seed := chaosSettings(t)
	runChaos(t, "vm", duration, seed)
}

// crashAndRestartDriver SIGKILLs the scenario's driver and starts it
// again.
func (s *scenario) crashAndRestartDriver() error {
	if err := killProcess(s.driver); err != nil {
		return err
	}
	switch {
	case s.aws != nil:
		s.startAWSDriver()
	case s.vm != nil:
		s.startLibvirtDriver()
	default:
		s.restartSim()
	}
	return nil
}
