package testenv

import (
	"fmt"
	"path/filepath"
	"strings"
)

// StartControllerManager runs bin/kube-controller-manager against the
// control plane with only the named controllers (e.g.
// "disruption-controller", which computes PodDisruptionBudget status for
// the Eviction API). dir (which must exist) receives its kubeconfig and its
// log (kube-controller-manager.log).
//
// It serves no port (--secure-port=0, so parallel test packages do not
// collide), elects no leader, and uses the administrator's credentials
// rather than per-controller service accounts, whose token controller would
// need a signing key. It returns once the process has started; what a
// controller does is the test's to wait for. Stop the process with Stop,
// e.g. in t.Cleanup.
func (e *Env) StartControllerManager(dir string, controllers ...string) (*Process, error) {
	if len(controllers) == 0 {
		return nil, fmt.Errorf("no controllers named: kube-controller-manager would run all of them")
	}
	kubeconfig, err := e.WriteKubeconfig(dir)
	if err != nil {
		return nil, fmt.Errorf("writing kubeconfig for kube-controller-manager: %w", err)
	}
	return startProcess(filepath.Join(e.Root, "bin", "kube-controller-manager"), filepath.Join(dir, "kube-controller-manager.log"), []string{
		"--kubeconfig=" + kubeconfig,
		"--controllers=" + strings.Join(controllers, ","),
		"--leader-elect=false",
		"--secure-port=0",
		"--use-service-account-credentials=false",
	})
}
