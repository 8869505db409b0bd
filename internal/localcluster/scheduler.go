package localcluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// scheduler is kube-scheduler with the default profile. Its connection and
// leader election are set in a KubeSchedulerConfiguration file: the
// equivalent flags are deprecated.
func (c *Cluster) scheduler() (*component, error) {
	kubeconfig := filepath.Join(c.dir, Scheduler+".kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.apiURL, c.pki, Scheduler); err != nil {
		return nil, err
	}
	config := filepath.Join(c.dir, Scheduler+".yaml")
	data := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
leaderElection:
  leaderElect: false
`, kubeconfig)
	if err := os.WriteFile(config, []byte(data), 0o600); err != nil {
		return nil, err
	}
	httpc, err := c.tlsClient()
	if err != nil {
		return nil, err
	}
	return &component{
		name: Scheduler,
		args: []string{
			"--config=" + config,
			"--authentication-kubeconfig=" + kubeconfig,
			"--authorization-kubeconfig=" + kubeconfig,
			"--bind-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(c.ports.scheduler),
			"--tls-cert-file=" + c.pki.servingCert,
			"--tls-private-key-file=" + c.pki.servingKey,
		},
		probe: httpProbe(httpc, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.ports.scheduler), "ok"),
	}, nil
}
