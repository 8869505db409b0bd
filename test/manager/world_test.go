package manager_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

var nsSeq atomic.Int64

// namespace creates a namespace of its own for the test.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := fmt.Sprintf("%s-%d", prefix, nsSeq.Add(1))
	if err := env.Client.Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	return ns
}

// startSim runs millwright-sim with builtin Nodes on a unix socket in dir
// and returns it with its endpoint once its admin API answers.
func startSim(t *testing.T, dir string) (*proc, string) {
	t.Helper()
	p, endpoint, _ := startSimAdmin(t, dir)
	return p, endpoint
}

// startSimAdmin is startSim that also returns the admin API's address.
func startSimAdmin(t *testing.T, dir string) (*proc, string, string) {
	t.Helper()
	endpoint := "unix://" + filepath.Join(dir, "sim.sock")
	admin := testenv.FreeAddr(t)
	p := start(t, "millwright-sim", simBin,
		"--endpoint", endpoint, "--admin-address", admin,
		"--kubeconfig", kubeconfig, "--node-mode", "builtin")
	testenv.Eventually(t, 30*time.Second, "the sim's admin API", func() (bool, error) {
		if p.HasExited() {
			t.Fatalf("millwright-sim exited at start:\n%s", p.LogTail(20))
		}
		code, _, err := testenv.HTTPGet("http://" + admin + "/vms")
		return code == 200, err
	})
	return p, endpoint, admin
}

// managerProc is a running millwright-manager and where its probes are.
type managerProc struct {
	*proc
	metrics, health string
}

// startManager runs millwright-manager for namespace ns with the sim at
// endpoint as driver "sim", on free loopback ports.
func startManager(t *testing.T, name, ns, endpoint string, extra ...string) *managerProc {
	t.Helper()
	m := &managerProc{metrics: testenv.FreeAddr(t), health: testenv.FreeAddr(t)}
	args := append([]string{
		"--kubeconfig", kubeconfig,
		"--namespace", ns,
		"--driver", "sim=" + endpoint,
		"--metrics-bind-address", m.metrics,
		"--health-probe-bind-address", m.health,
		"--backoff-base", "200ms", "--backoff-cap", "2s",
		"--graceful-shutdown-timeout", "10s",
	}, extra...)
	m.proc = start(t, name, managerBin, args...)
	return m
}

func (m *managerProc) scrape() (string, error) {
	code, body, err := testenv.HTTPGet("http://" + m.metrics + "/metrics")
	if err == nil && code != 200 {
		err = fmt.Errorf("/metrics answered %d", code)
	}
	return body, err
}

// reconciles is how many Machine reconciles the manager has finished.
func (m *managerProc) reconciles(t *testing.T) float64 {
	t.Helper()
	body, err := m.scrape()
	if err != nil {
		t.Fatalf("%s: %v", m.Name, err)
	}
	var total float64
	for _, result := range []string{"success", "error", "requeue", "requeue_after"} {
		v, _ := metric(body, "controller_runtime_reconcile_total", label("controller", "machine"), label("result", result))
		total += v
	}
	return total
}

// leading reports whether the manager holds the Lease, by its own account.
func (m *managerProc) leading() (bool, error) {
	body, err := m.scrape()
	if err != nil {
		return false, err
	}
	v, _ := metric(body, "leader_election_master_status")
	return v == 1, nil
}

const simSpec = `{"region":"local","zones":["local-a","local-b"]}`

func createClass(t *testing.T, ns string) {
	t.Helper()
	create(t, &v1alpha1.MachineClass{
		ObjectMeta: metav1.ObjectMeta{Name: "sim", Namespace: ns},
		Spec:       v1alpha1.MachineClassSpec{Provider: "sim", ProviderSpec: runtime.RawExtension{Raw: []byte(simSpec)}},
	})
}

// createMachine creates a Machine of class "sim". Its name is also its
// Node's, and Nodes are cluster-scoped: tests prefix their Machines with
// their namespace, unique in the process, so that no test (nor a rerun
// with -count) finds another's Node under its Machine's name.
func createMachine(t *testing.T, ns, name string) {
	t.Helper()
	create(t, &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "sim"}},
	})
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := env.Client.Create(context.Background(), obj); err != nil {
		t.Fatalf("creating %T %s: %v", obj, obj.GetName(), err)
	}
}

// waitRunning waits until the Machine is Running, its Node Ready.
func waitRunning(t *testing.T, ns, name string, bound time.Duration) {
	t.Helper()
	m := &v1alpha1.Machine{}
	testenv.Eventually(t, bound, "Machine "+name+" to be Running", func() (bool, error) {
		if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, m); err != nil {
			return false, err
		}
		if m.Status.Phase == v1alpha1.PhaseRunning {
			return true, nil
		}
		return false, fmt.Errorf("phase %q, last operation %+v", m.Status.Phase, m.Status.LastOperation)
	})
}

// readyz returns /readyz's status and body (the failed checks, if any).
func (m *managerProc) readyz() (int, string, error) {
	code, body, err := testenv.HTTPGet("http://" + m.health + "/readyz")
	return code, strings.TrimSpace(body), err
}
