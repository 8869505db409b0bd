package nodeagent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"

	"github.com/millwright-dev/millwright/internal/cabundle"
)

// The files Bootstrap writes into the certificate directory: the node's
// key, its signed client certificate, and a kubeconfig using them.
const (
	keyFile        = "node.key"
	certFile       = "node.crt"
	kubeconfigFile = "kubelet.conf"
)

// nodeUsages are the key usages of a kubelet's client certificate with
// an ECDSA key; the nodeclient auto-approver accepts exactly these (with
// key encipherment added for RSA keys).
var nodeUsages = []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}

// Bootstrap is the kubelet's TLS bootstrap: it makes a key, asks with the
// bootstrap token for a client certificate for system:node:<NodeName>
// (group system:nodes, signer kubernetes.io/kube-apiserver-client-kubelet),
// waits until kube-controller-manager has approved and signed it, writes
// key, certificate and kubeconfig into certDir (mode 0600; in a VM a
// tmpfs), and returns the node's client configuration. ctx bounds the
// wait.
func Bootstrap(ctx context.Context, cfg JoinConfig, certDir string) (*rest.Config, error) {
	// The node's own client pins the cluster's CA (newNodeClient): without
	// a usable one, the token must not be spent on a certificate that
	// could never be used (docs/providers/node-agent.md).
	if _, err := cabundle.Parse(cfg.CA); err != nil {
		return nil, fmt.Errorf("not bootstrapping: %w", err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	subject := &pkix.Name{CommonName: "system:node:" + cfg.NodeName, Organization: []string{"system:nodes"}}
	csrPEM, err := certutil.MakeCSR(key, subject, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("making the CSR: %w", err)
	}
	bootstrap := &rest.Config{
		Host:            cfg.Server,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CA},
		BearerToken:     cfg.Token,
		UserAgent:       userAgent,
	}
	client, err := kubernetes.NewForConfig(bootstrap)
	if err != nil {
		return nil, err
	}
	name, uid, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, csrName(cfg.NodeName, csrPEM),
		certificatesv1.KubeAPIServerClientKubeletSignerName, nil, nodeUsages, key)
	if err != nil {
		if apierrors.IsUnauthorized(err) {
			return nil, fmt.Errorf("the API server at %s refused the bootstrap token (is it valid and unexpired?): %w", cfg.Server, err)
		}
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("the bootstrap token may not create CSRs (is group system:bootstrappers bound to ClusterRole system:node-bootstrapper?): %w", err)
		}
		return nil, fmt.Errorf("creating the CSR: %w", err)
	}
	certPEM, err := csr.WaitForCertificate(ctx, client, name, uid)
	if err != nil {
		return nil, fmt.Errorf("waiting for CSR %s to be approved and signed: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	if err := writeCredentials(certDir, cfg, certPEM, keyPEM); err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            cfg.Server,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CA, CertData: certPEM, KeyData: keyPEM},
		UserAgent:       userAgent,
	}, nil
}

// csrName is the kubelet's naming: node-csr- and a digest of the request,
// so the CSR says whose it is.
func csrName(node string, csrPEM []byte) string {
	sum := sha256.Sum256(append([]byte(node+"\x00"), csrPEM...))
	return "node-csr-" + hex.EncodeToString(sum[:16])
}

func writeCredentials(dir string, cfg JoinConfig, certPEM, keyPEM []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, keyFile), keyPEM, 0o600); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, certFile), certPEM, 0o600); err != nil {
		return err
	}
	kc := clientcmdapi.NewConfig()
	kc.Clusters["default"] = &clientcmdapi.Cluster{Server: cfg.Server, CertificateAuthorityData: cfg.CA}
	kc.AuthInfos["default"] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(dir, certFile), ClientKey: filepath.Join(dir, keyFile)}
	kc.Contexts["default"] = &clientcmdapi.Context{Cluster: "default", AuthInfo: "default"}
	kc.CurrentContext = "default"
	return clientcmd.WriteToFile(*kc, filepath.Join(dir, kubeconfigFile))
}

// reuseCredentials returns the client configuration of the certificate a
// previous run of the agent wrote into certDir, when it is still good for
// this node for at least minValid: a restarted agent (or a rebooted VM
// keeping its certificate directory) rejoins with it, as the kubelet does,
// instead of bootstrapping again with a token that is deleted once the
// Node has joined. nil without error when there is none; an error says why
// a certificate there cannot be used.
func reuseCredentials(certDir string, cfg JoinConfig, now time.Time, minValid time.Duration) (*rest.Config, error) {
	certPEM, err := os.ReadFile(filepath.Join(certDir, certFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	keyPEM, err := os.ReadFile(filepath.Join(certDir, keyFile))
	if err != nil {
		return nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, err
	}
	if want := "system:node:" + cfg.NodeName; cert.Subject.CommonName != want {
		return nil, fmt.Errorf("%s is for %s, not %s", certFile, cert.Subject.CommonName, want)
	}
	if cert.NotAfter.Before(now.Add(minValid)) {
		return nil, fmt.Errorf("%s expires at %s", certFile, cert.NotAfter.Format(time.RFC3339))
	}
	return &rest.Config{
		Host:            cfg.Server,
		TLSClientConfig: rest.TLSClientConfig{CAData: cfg.CA, CertData: certPEM, KeyData: keyPEM},
		UserAgent:       userAgent,
	}, nil
}
