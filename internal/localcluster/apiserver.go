package localcluster

import (
	"context"
	"fmt"
	"strconv"
)

// Addresses of the cluster's virtual networks. Nothing routes them: they
// only have to be valid and not overlap.
const (
	serviceCIDR         = "10.96.0.0/16"
	kubernetesServiceIP = "10.96.0.1" // the first address of serviceCIDR
	podCIDR             = "10.244.0.0/16"
)

// apiServer is kube-apiserver with client-certificate and bootstrap-token
// authentication, Node and RBAC authorization, the NodeRestriction
// admission plugin, and service-account tokens signed with the
// generated key pair.
func (c *Cluster) apiServer() (*component, error) {
	audit, err := c.auditArgs()
	if err != nil {
		return nil, err
	}
	return &component{
		name: APIServer,
		args: append([]string{
			fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", c.ports.etcdClient),
			"--bind-address=" + c.opts.APIServerBindAddress,
			"--advertise-address=127.0.0.1",
			"--secure-port=" + strconv.Itoa(c.ports.apiServer),
			"--tls-cert-file=" + c.pki.servingCert,
			"--tls-private-key-file=" + c.pki.servingKey,
			"--client-ca-file=" + c.pki.caCert,
			"--authorization-mode=Node,RBAC",
			// Nodes join as a kubelet does (TLS bootstrap): a bootstrap
			// token (a kube-system Secret) authenticates the CSR for the
			// node's client certificate; see nodeBootstrapRBAC.
			"--enable-bootstrap-token-auth=true",
			// A node's credentials reach only its own Node, Lease and
			// pods, as in a production cluster.
			"--enable-admission-plugins=NodeRestriction",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + c.pki.saPub,
			"--service-account-signing-key-file=" + c.pki.saKey,
			"--service-cluster-ip-range=" + serviceCIDR,
			"--allow-privileged=true",
			// The "kubernetes" Service's endpoint would be the advertised
			// 127.0.0.1, which Endpoints validation refuses (loopback):
			// the reconciler would log an error every ten seconds. No pod
			// here really runs, so none needs the endpoint.
			"--endpoint-reconciler-type=none",
			// On SIGTERM, wait for in-flight requests, then give open
			// watches 2s to go instead of the default 60s: with kube-
			// controller-manager, the scheduler and kwok watching, a stop
			// would otherwise take a minute.
			"--shutdown-send-retry-after=true",
			// The aggregation layer, as kubeadm sets it up. Without a
			// request-header CA in kube-system/extension-apiserver-
			// authentication, kube-controller-manager and kube-scheduler
			// (which read it to authenticate their callers) log an error
			// every few seconds.
			"--requestheader-client-ca-file=" + c.pki.frontProxyCA,
			"--requestheader-allowed-names=" + frontProxyClientName,
			"--requestheader-username-headers=X-Remote-User",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--proxy-client-cert-file=" + c.pki.proxyClientCert,
			"--proxy-client-key-file=" + c.pki.proxyClientKey,
		}, audit...),
		// /readyz, asked as the administrator, passes once etcd is
		// reachable and every post-start hook (RBAC bootstrap policy, the
		// priority classes, ...) has run.
		probe: func(ctx context.Context) error {
			body, err := c.client.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
			if err != nil {
				return fmt.Errorf("GET /readyz: %w: %s", err, body)
			}
			return nil
		},
	}, nil
}
