package localcluster

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controllerManager is kube-controller-manager running every default
// controller as its own service account, as a production control plane
// does, so RBAC problems show up here rather than in production.
func (c *Cluster) controllerManager() (*component, error) {
	kubeconfig := filepath.Join(c.dir, ControllerManager+".kubeconfig")
	if err := writeKubeconfig(kubeconfig, c.apiURL, c.pki, ControllerManager); err != nil {
		return nil, err
	}
	httpc, err := c.tlsClient()
	if err != nil {
		return nil, err
	}
	healthz := httpProbe(httpc, fmt.Sprintf("https://127.0.0.1:%d/healthz", c.ports.controllerManager), "ok")
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(c.ports.controllerManager),
		"--tls-cert-file=" + c.pki.servingCert,
		"--tls-private-key-file=" + c.pki.servingKey,
		// "*" leaves out bootstrapsigner (signs kube-public/cluster-
		// info with bootstrap tokens) and tokencleaner (deletes expired
		// tokens): kubeadm turns both on, and nodes joining with
		// bootstrap tokens rely on them.
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + c.pki.saKey,
		"--root-ca-file=" + c.pki.caCert,
		"--cluster-signing-cert-file=" + c.pki.caCert,
		"--cluster-signing-key-file=" + c.pki.caKey,
		"--leader-elect=false",
	}
	return &component{
		name: ControllerManager,
		args: append(args, c.opts.NodeHeartbeats.controllerManagerArgs()...),
		// /healthz, then the "default" ServiceAccount: until the
		// serviceaccount controller has made it, the API server refuses
		// every pod in the namespace, and a caller's first Deployment would
		// sit in the ReplicaSet controller's back-off.
		probe: func(ctx context.Context) error {
			if err := healthz(ctx); err != nil {
				return err
			}
			if _, err := c.client.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{}); err != nil {
				return fmt.Errorf("waiting for the default ServiceAccount: %w", err)
			}
			return nil
		},
	}, nil
}
