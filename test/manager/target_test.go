package manager_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// One manager process, the sim inside it (--driver sim=in-process:sim),
// Machines in one cluster and their Nodes in another
// (--control-kubeconfig, --target-kubeconfig): the Node registers in the
// target, the Machine goes Running, and nothing leaks into the control
// cluster.
func TestInProcessSimWithSeparateTargetCluster(t *testing.T) {
	target, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = target.Stop() })
	targetKubeconfig, err := target.WriteKubeconfig(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}

	ns := namespace(t, "split")
	m := &managerProc{metrics: testenv.FreeAddr(t), health: testenv.FreeAddr(t)}
	m.proc = start(t, "millwright-manager", managerBin,
		"--control-kubeconfig", kubeconfig,
		"--target-kubeconfig", targetKubeconfig,
		"--namespace", ns,
		"--driver", "sim=in-process:sim",
		"--metrics-bind-address", m.metrics,
		"--health-probe-bind-address", m.health)

	createClass(t, ns)
	createMachine(t, ns, ns+"-m1")
	waitRunning(t, ns, ns+"-m1", 60*time.Second)
	machine := &v1alpha1.Machine{}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: ns + "-m1"}, machine); err != nil {
		t.Fatal(err)
	}
	nodeName := machine.Status.NodeRef.Name
	if err := target.Client.Get(context.Background(), client.ObjectKey{Name: nodeName}, &corev1.Node{}); err != nil {
		t.Errorf("the Node is not in the target cluster: %v", err)
	}
	if err := env.Client.Get(context.Background(), client.ObjectKey{Name: nodeName}, &corev1.Node{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Node appeared in the control cluster (err %v)", err)
	}
	testenv.Eventually(t, 30*time.Second, "/readyz to answer 200", func() (bool, error) {
		code, _, err := m.readyz()
		return code == 200, err
	})

	m.Signal(t, syscall.SIGTERM)
	if code := m.WaitExit(t, exitBound); code != 0 {
		t.Errorf("millwright-manager exited with %d after SIGTERM; want 0", code)
	}
}
