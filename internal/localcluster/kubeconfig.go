package localcluster

import (
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// contextName names the cluster, user and context in every kubeconfig.
const contextName = "millwright-local"

// writeKubeconfig writes a kubeconfig reaching the API server as user (a
// key of pki.clients). The certificates are embedded, so the file works
// when copied elsewhere.
func writeKubeconfig(path, server string, p *pki, user string) error {
	cc, ok := p.clients[user]
	if !ok {
		return fmt.Errorf("no client certificate for %q", user)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[contextName] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: p.caPEM}
	cfg.AuthInfos[contextName] = &clientcmdapi.AuthInfo{ClientCertificateData: cc.certPEM, ClientKeyData: cc.keyPEM}
	cfg.Contexts[contextName] = &clientcmdapi.Context{Cluster: contextName, AuthInfo: contextName}
	cfg.CurrentContext = contextName
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return nil
}

// restConfig reaches the API server as user (a key of pki.clients).
func restConfig(server string, p *pki, user string) *rest.Config {
	cc := p.clients[user]
	return &rest.Config{
		Host: server,
		TLSClientConfig: rest.TLSClientConfig{
			CAData:   p.caPEM,
			CertData: cc.certPEM,
			KeyData:  cc.keyPEM,
		},
		// client-go's defaults (5 QPS) would make a test that creates a
		// few dozen objects wait on its own rate limiter.
		QPS:   100,
		Burst: 200,
	}
}
