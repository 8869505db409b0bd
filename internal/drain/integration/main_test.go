// Package integration tests package drain on a real control plane: the
// kube-apiserver and etcd from bin/, kwok playing the kubelet, and
// kube-controller-manager's disruption controller. The pure planning logic
// is tested next to the code, in package drain, without a control plane.
package integration

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/millwright-dev/millwright/internal/testenv"
)

// env is the real control plane: kube-apiserver and etcd, kwok playing the
// kubelet of the Nodes annotated for it, and kube-controller-manager running
// only the disruption controller, which computes the PodDisruptionBudget
// status the Eviction API decides from.
var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

// run starts the processes, runs the tests and stops the processes again
// whether the tests passed or not; it is separate from TestMain so its
// deferred stops run before os.Exit.
func run(m *testing.M) int {
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "stopping control plane:", err)
		}
	}()
	dir, err := os.MkdirTemp("", "drain-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	kwok, err := env.StartKwok(ctx, dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = kwok.Stop() }()
	kcm, err := env.StartControllerManager(dir, "disruption-controller")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { _ = kcm.Stop() }()
	code := m.Run()
	if code != 0 {
		// Keep the logs of kwok and kube-controller-manager for the post-mortem.
		fmt.Fprintln(os.Stderr, "logs of kwok and kube-controller-manager kept in", dir)
	} else {
		_ = os.RemoveAll(dir)
	}
	return code
}
