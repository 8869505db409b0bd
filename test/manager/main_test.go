// Package manager_test runs the real millwright-manager and millwright-sim
// binaries as separate processes against a real kube-apiserver: a Machine
// goes Running through the driver's gRPC socket, the probes and metrics
// answer, SIGTERM stops both cleanly, and leader election hands over when
// the leader is killed.
package manager_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/millwright-dev/millwright/internal/testenv"
)

var (
	env *testenv.Env
	// kubeconfig is an administrator kubeconfig for the processes.
	kubeconfig string
	// managerBin and simBin are the binaries under test.
	managerBin, simBin string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// One build for every test: linking both binaries costs far more than
	// any test here.
	dir, err := os.MkdirTemp("", "millwright-binaries-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
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
	if kubeconfig, err = env.WriteKubeconfig(dir); err != nil {
		fmt.Fprintln(os.Stderr, "writing kubeconfig:", err)
		return 1
	}
	return m.Run()
}

func build(dir string) error {
	root, err := testenv.RepoRoot()
	if err != nil {
		return err
	}
	managerBin, simBin = filepath.Join(dir, "millwright-manager"), filepath.Join(dir, "millwright-sim")
	cmd := exec.Command("go", "build", "-o", dir+string(filepath.Separator), "./cmd/millwright-manager", "./cmd/millwright-sim")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building the binaries: %v\n%s", err, out)
	}
	return nil
}
