package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// scenario is one scenario's world: its namespace (also the name of its
// MachineDeployment, and so the prefix of its Machines' and Nodes' names),
// its driver (the sim, or millwright-libvirt and real VMs: vm_test.go) and
// its managers, all processes of the shared cluster.
type scenario struct {
	t  testing.TB
	ns string
	// provider is the driver's name, as MachineClass spec.provider says
	// it: "sim" or "libvirt".
	provider string
	// driver is the name of the driver's process, socket its endpoint.
	driver, socket string
	// simAdmin is the sim's admin API address; simArgs its flags.
	simAdmin string
	simArgs  []string
	// vm is the libvirt side of a VM scenario; nil for the sim.
	vm *vmWorld
	// aws is the EC2 side of an AWS scenario (aws_test.go); nil otherwise.
	aws      *awsWorld
	managers []*manager
	// extraNodes are Nodes of the scenario not named after its namespace
	// (orphan VMs' Nodes), deleted at the end.
	extraNodes []string
}

// manager is one millwright-manager process of a scenario.
type manager struct {
	name, health, metrics string
	args                  []string
}

// newScenario creates namespace name and starts a sim for it, with
// simFlags after the default flags. At the end
// of the test it stops every process the scenario started — printing the
// tail of their logs if the test failed — and deletes the scenario's Nodes,
// so the next scenario starts on an empty cluster.
func newScenario(t *testing.T, name string, simFlags ...string) *scenario {
	t.Helper()
	s := beginScenario(t, name, "sim")
	s.startSim(simFlags...)
	return s
}

// beginScenario creates namespace name for a scenario whose driver is
// provider, and cleans up at the end of the test.
func beginScenario(t testing.TB, name, provider string) *scenario {
	t.Helper()
	s := &scenario{t: t, ns: name, provider: provider}
	if err := k8s.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(s.cleanup)
	return s
}

func (s *scenario) cleanup() {
	if s.t.Failed() {
		s.t.Logf("--- Machines of %s at the end ---\n%s", s.ns, s.describeMachines())
		s.t.Logf("--- their owners and budgets ---\n%s", s.describeOwners())
		for _, name := range s.processNames() {
			tail := (&testenv.Process{Log: cluster.LogPath(name)}).LogTail(60)
			s.t.Logf("--- %s (last 60 lines of %s) ---\n%s", name, cluster.LogPath(name), tail)
		}
	}
	nodes := s.extraNodes
	if vms, err := s.vms(); err == nil {
		for _, vm := range vms {
			nodes = append(nodes, vm.NodeName)
		}
	}
	for _, name := range s.processNames() {
		_ = cluster.StopProcess(name) // not running any more: nothing to do
	}
	own, _ := s.scenarioNodes()
	for _, n := range append(nodes, own...) {
		_ = client.IgnoreNotFound(k8s.Delete(context.Background(), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}))
	}
	if s.vm != nil {
		s.vm.cleanup(s.t)
	}
}

func (s *scenario) processNames() []string {
	var names []string
	if s.driver != "" { // not started yet
		names = append(names, s.driver)
	}
	for _, m := range s.managers {
		names = append(names, m.name)
	}
	return names
}

// startSim starts the scenario's sim (kwok Nodes, a snapshot so that a
// restarted sim keeps its cloud, then extra) and waits for its admin API.
func (s *scenario) startSim(extra ...string) {
	s.t.Helper()
	s.driver = "sim-" + s.ns
	s.simAdmin = testenv.FreeAddr(s.t)
	s.socket = "unix://" + filepath.Join(cluster.Dir(), s.ns+"-sim.sock")
	s.simArgs = []string{
		"--endpoint", s.socket, "--admin-address", s.simAdmin, "--kubeconfig", cluster.Kubeconfig(),
		"--node-mode", "kwok", "--snapshot", filepath.Join(cluster.Dir(), s.ns+"-sim.json"),
	}
	s.simArgs = append(s.simArgs, extra...)
	s.restartSim()
}

// restartSim starts the sim again (after stopSim or killSim) with the
// same flags, and so the same snapshot.
func (s *scenario) restartSim() {
	s.t.Helper()
	s.start(s.driver, "millwright-sim", s.simArgs)
	s.eventually(30*time.Second, "the sim's admin API", func() (bool, error) {
		code, _, err := testenv.HTTPGet("http://" + s.simAdmin + "/vms")
		return code == 200, err
	})
}

func (s *scenario) start(name, binary string, args []string) {
	s.t.Helper()
	if err := cluster.StartProcess(context.Background(), name, filepath.Join(binDir, binary), args...); err != nil {
		s.t.Fatal(err)
	}
}

// managerFlags are the flags of every manager: fast retries, so that the
// scenarios converge in seconds, and probes on free ports.
func (s *scenario) managerFlags(health, metrics string) []string {
	return []string{
		"--kubeconfig", cluster.Kubeconfig(),
		"--namespace", s.ns,
		"--driver", s.provider + "=" + s.socket,
		"--health-probe-bind-address", health,
		"--metrics-bind-address", metrics,
		"--backoff-base", "200ms", "--backoff-cap", "2s",
		"--long-backoff-base", "1s", "--long-backoff-cap", "4s",
		"--graceful-shutdown-timeout", "5s",
		"--machine-health-resync", "10s",
		"--machine-safety-apiserver-statuscheck-period", "2s",
		"--machine-safety-apiserver-statuscheck-timeout", "1s",
	}
}

// startManager starts a manager for the scenario's namespace; extra flags
// come after the defaults and so override them. It waits for /readyz
// unless noWait.
func (s *scenario) startManager(extra ...string) *manager {
	s.t.Helper()
	m := &manager{name: fmt.Sprintf("manager-%s-%d", s.ns, len(s.managers)+1), health: testenv.FreeAddr(s.t), metrics: testenv.FreeAddr(s.t)}
	m.args = append(s.managerFlags(m.health, m.metrics), extra...)
	s.managers = append(s.managers, m)
	s.restartManager(m)
	return m
}

// restartManager starts m again (after it was stopped) and waits until
// it is ready.
func (s *scenario) restartManager(m *manager) {
	s.t.Helper()
	s.start(m.name, "millwright-manager", m.args)
	s.waitReady(m)
}

func (s *scenario) waitReady(m *manager) {
	s.t.Helper()
	s.eventually(time.Minute, m.name+" to be ready", func() (bool, error) {
		if exited, err := cluster.ProcessExited(m.name); exited {
			s.t.Fatalf("%s exited: %v", m.name, err)
		}
		code, body, err := testenv.HTTPGet("http://" + m.health + "/readyz")
		if err == nil && code != 200 {
			err = fmt.Errorf("/readyz %d: %s", code, body)
		}
		return err == nil, err
	})
}

// killManager kills m with SIGKILL, as a crash or an OOM kill would, and
// reaps it.
func (s *scenario) killManager(m *manager) {
	s.t.Helper()
	if err := kill(m); err != nil {
		s.t.Fatal(err)
	}
}

func kill(m *manager) error { return killProcess(m.name) }

// killProcess kills a process of the scenario with SIGKILL and reaps it.
func killProcess(name string) error {
	pid, ok := cluster.PIDs()[name]
	if !ok {
		return fmt.Errorf("%s is not running", name)
	}
	// ESRCH: it has exited on its own (a manager that lost its lease)
	// and was reaped; it is killed all the same.
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("killing %s: %w", name, err)
	}
	return cluster.StopProcess(name)
}

// stopSim stops the sim with SIGTERM: it saves its snapshot on the way out.
func (s *scenario) stopSim() {
	s.t.Helper()
	if err := cluster.StopProcess(s.driver); err != nil {
		s.t.Fatal(err)
	}
}

// killSim kills the sim with SIGKILL: creates and deletes it answered are
// on disk; other changes since its last periodic save (at most a second
// before) are lost.
func (s *scenario) killSim() {
	s.t.Helper()
	if err := killProcess(s.driver); err != nil {
		s.t.Fatal(err)
	}
}

// crashAndRestart kills m and starts it again without waiting for it to
// be ready; it may run on any goroutine.
func (s *scenario) crashAndRestart(m *manager) error {
	if err := kill(m); err != nil {
		return err
	}
	return cluster.StartProcess(context.Background(), m.name, filepath.Join(binDir, "millwright-manager"), m.args...)
}

// eventually polls cond every 500ms until it holds, failing the test after
// bound with cond's last error.
func (s *scenario) eventually(bound time.Duration, what string, cond func() (bool, error)) {
	s.t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 500*time.Millisecond, bound, true, func(context.Context) (bool, error) {
		ok, err := cond()
		last = err
		return ok, nil
	})
	if err != nil {
		s.t.Fatalf("%s: no %s within %s (last: %v)", s.ns, what, bound, last)
	}
}

// describeMachines is a line per Machine, for failure messages.
func (s *scenario) describeMachines() string {
	list := &v1alpha1.MachineList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(s.ns)); err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, m := range list.Items {
		fmt.Fprintf(&b, "%s phase=%s deleting=%t node=%s op=%s/%s %q failure=%q\n", m.Name, m.Status.Phase,
			m.DeletionTimestamp != nil, nodeOf(&m), m.Status.LastOperation.Type, m.Status.LastOperation.State,
			m.Status.LastOperation.Description, m.Status.FailureReason)
	}
	return b.String()
}

// describeOwners prints the namespace's MachineDeployments, MachineSets
// and MachineDisruptionBudgets, each with its labels, spec.replicas and
// whole status (conditions, counts, grants), to say why a fleet did not
// get where it was asked to go.
func (s *scenario) describeOwners() string {
	ctx := context.Background()
	var b strings.Builder
	line := func(kind, name string, labels map[string]string, replicas *int32, status any) {
		js, err := json.Marshal(status)
		if err != nil {
			js = []byte(err.Error())
		}
		if replicas != nil {
			fmt.Fprintf(&b, "%s %s labels=%v spec.replicas=%d status=%s\n", kind, name, labels, *replicas, js)
			return
		}
		fmt.Fprintf(&b, "%s %s labels=%v status=%s\n", kind, name, labels, js)
	}
	deployments := &v1alpha1.MachineDeploymentList{}
	sets := &v1alpha1.MachineSetList{}
	budgets := &v1alpha1.MachineDisruptionBudgetList{}
	for _, l := range []client.ObjectList{deployments, sets, budgets} {
		if err := k8s.List(ctx, l, client.InNamespace(s.ns)); err != nil {
			fmt.Fprintf(&b, "listing: %v\n", err)
		}
	}
	for _, d := range deployments.Items {
		line("MachineDeployment", d.Name, d.Labels, &d.Spec.Replicas, d.Status)
	}
	for _, ms := range sets.Items {
		line("MachineSet", ms.Name, ms.Labels, &ms.Spec.Replicas, ms.Status)
	}
	for _, mdb := range budgets.Items {
		line("MachineDisruptionBudget", mdb.Name, mdb.Labels, nil, mdb.Status)
	}
	return b.String()
}

// seededRand returns a random source seeded from E2E_SEED, or from the
// clock, and logs the seed so that a failing run can be replayed.
func seededRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("E2E_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &seed); err != nil {
			t.Fatalf("E2E_SEED=%q: %v", v, err)
		}
	}
	t.Logf("random seed %d (set E2E_SEED=%d to replay)", seed, seed)
	return rand.New(rand.NewPCG(seed, seed))
}
