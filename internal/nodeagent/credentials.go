package nodeagent

import (
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/connrotation"

	"github.com/millwright-dev/millwright/internal/cabundle"
)

// nodeCredentials is the node's current client certificate, which every
// new connection of the agent's client presents. A rotation swaps it and
// closes the connections made with the old one, so the API server sees
// the new certificate from the next request on, as the kubelet's
// certificate manager does (docs/providers/node-agent.md, "Certificate
// rotation"). The client itself never changes: the lease controller, the
// update watch and the status posts keep theirs.
type nodeCredentials struct {
	cert   atomic.Pointer[tls.Certificate] // Leaf set
	dialer *connrotation.Dialer
}

// newNodeClient returns a client for cfg's API server authenticated with
// the node certificate certPEM and its key keyPEM, and the credentials
// that rotate it.
func newNodeClient(cfg JoinConfig, certPEM, keyPEM []byte) (kubernetes.Interface, *nodeCredentials, error) {
	creds := &nodeCredentials{dialer: connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)}
	if err := creds.set(certPEM, keyPEM); err != nil {
		return nil, nil, err
	}
	roots, err := cabundle.Parse(cfg.CA)
	if err != nil {
		return nil, nil, err
	}
	// client-go's own transport settings, with the certificate read at
	// each handshake instead of fixed.
	tr := utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		MaxIdleConnsPerHost: 25,
		DialContext:         creds.dialer.DialContext,
		TLSClientConfig: &tls.Config{
			MinVersion: tls.VersionTLS12,
			RootCAs:    roots,
			GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
				return creds.cert.Load(), nil
			},
		},
	})
	client, err := kubernetes.NewForConfig(&rest.Config{Host: cfg.Server, Transport: tr, UserAgent: userAgent})
	if err != nil {
		return nil, nil, err
	}
	return client, creds, nil
}

// set makes certPEM and keyPEM the certificate of new connections and
// closes the open ones (their requests fail once and are retried by
// their callers: the lease controller, the watch, the status loop).
func (n *nodeCredentials) set(certPEM, keyPEM []byte) error {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return err
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return err
		}
	}
	n.cert.Store(&pair)
	n.dialer.CloseAll()
	return nil
}

// leaf is the current certificate.
func (n *nodeCredentials) leaf() *x509.Certificate { return n.cert.Load().Leaf }
