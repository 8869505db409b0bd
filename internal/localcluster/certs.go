package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// pki is the cluster's generated key material: the paths of its PEM files,
// and the PEM data the kubeconfigs embed.
type pki struct {
	dir string

	caCert, caKey           string // the CA, which also signs CSRs (kube-controller-manager)
	servingCert, servingKey string // 127.0.0.1/localhost, for every secure port
	saKey, saPub            string // signs and verifies service-account tokens

	// The aggregation layer's front proxy: the API server proxies
	// requests to extension API servers with proxyClient, which they
	// trust through frontProxyCA. A CA of its own, so that no ordinary
	// client certificate can pass for the proxy.
	frontProxyCA, proxyClientCert, proxyClientKey string

	caPEM   []byte
	clients map[string]clientCert // by component, plus adminUser
}

type clientCert struct {
	certPEM, keyPEM []byte
}

// frontProxyClientName is the front proxy's client certificate's name,
// the only one the API server accepts request headers from.
const frontProxyClientName = "front-proxy-client"

// adminUser keys the administrator's client certificate in pki.clients.
const adminUser = "admin"

// clientIdentities are the users the components authenticate as. kube-
// controller-manager and kube-scheduler are the users the default RBAC
// policy binds their roles to; kwok writes the status of any Node and Pod
// it manages and deletes pods, which no narrower built-in role allows.
var clientIdentities = map[string]pkix.Name{
	adminUser:         {CommonName: "millwright-admin", Organization: []string{"system:masters"}},
	ControllerManager: {CommonName: "system:kube-controller-manager"},
	Scheduler:         {CommonName: "system:kube-scheduler"},
	Kwok:              {CommonName: "kwok", Organization: []string{"system:masters"}},
}

// generatePKI creates dir's certificates and keys. ECDSA P-256 throughout:
// every component accepts it, and it is generated in microseconds where
// RSA takes a noticeable part of a test's start-up.
func generatePKI(dir string, extraServingIPs []net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p := &pki{
		dir:    dir,
		caCert: filepath.Join(dir, "ca.crt"), caKey: filepath.Join(dir, "ca.key"),
		servingCert: filepath.Join(dir, "serving.crt"), servingKey: filepath.Join(dir, "serving.key"),
		saKey: filepath.Join(dir, "sa.key"), saPub: filepath.Join(dir, "sa.pub"),
		frontProxyCA:    filepath.Join(dir, "front-proxy-ca.crt"),
		proxyClientCert: filepath.Join(dir, "front-proxy-client.crt"), proxyClientKey: filepath.Join(dir, "front-proxy-client.key"),
		clients: map[string]clientCert{},
	}
	now := time.Now()
	// Valid from an hour ago, so a clock a little behind does not reject
	// the certificates; for ten years, so a kept Dir stays usable.
	notBefore, notAfter := now.Add(-time.Hour), now.AddDate(10, 0, 0)

	newCA := func(name string) ([]byte, *x509.Certificate, *ecdsa.PrivateKey, error) {
		key, err := newKey()
		if err != nil {
			return nil, nil, nil, err
		}
		der, cert, err := sign(&x509.Certificate{
			Subject:               pkix.Name{CommonName: name},
			NotBefore:             notBefore,
			NotAfter:              notAfter,
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			BasicConstraintsValid: true,
			IsCA:                  true,
		}, key.Public(), nil, key)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("creating CA %s: %w", name, err)
		}
		return pemCert(der), cert, key, nil
	}
	caPEM, caCert, caKey, err := newCA("millwright-localcluster-ca")
	if err != nil {
		return nil, err
	}
	p.caPEM = caPEM
	if err := writeCertKey(p.caCert, p.caKey, p.caPEM, caKey); err != nil {
		return nil, err
	}

	leaf := func(caCert *x509.Certificate, caKey *ecdsa.PrivateKey, subject pkix.Name, usage x509.ExtKeyUsage, ips []net.IP, dns []string) ([]byte, *ecdsa.PrivateKey, error) {
		key, err := newKey()
		if err != nil {
			return nil, nil, err
		}
		der, _, err := sign(&x509.Certificate{
			Subject:     subject,
			NotBefore:   notBefore,
			NotAfter:    notAfter,
			KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
			ExtKeyUsage: []x509.ExtKeyUsage{usage},
			IPAddresses: ips,
			DNSNames:    dns,
		}, key.Public(), caCert, caKey)
		if err != nil {
			return nil, nil, fmt.Errorf("creating certificate for %s: %w", subject.CommonName, err)
		}
		return pemCert(der), key, nil
	}

	// The names in-cluster clients would use too, and the first IP of the
	// service range (the "kubernetes" Service), cost nothing to include;
	// extraServingIPs are where VMs reach the API server.
	servingIPs := append([]net.IP{net.IPv4(127, 0, 0, 1), net.ParseIP(kubernetesServiceIP)}, extraServingIPs...)
	servingPEM, servingKey, err := leaf(caCert, caKey, pkix.Name{CommonName: "localhost"}, x509.ExtKeyUsageServerAuth,
		servingIPs,
		[]string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"})
	if err != nil {
		return nil, err
	}
	if err := writeCertKey(p.servingCert, p.servingKey, servingPEM, servingKey); err != nil {
		return nil, err
	}

	for who, subject := range clientIdentities {
		certPEM, key, err := leaf(caCert, caKey, subject, x509.ExtKeyUsageClientAuth, nil, nil)
		if err != nil {
			return nil, err
		}
		keyPEM, err := pemKey(key)
		if err != nil {
			return nil, err
		}
		p.clients[who] = clientCert{certPEM: certPEM, keyPEM: keyPEM}
	}

	fpPEM, fpCert, fpKey, err := newCA("millwright-localcluster-front-proxy-ca")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.frontProxyCA, fpPEM, 0o600); err != nil {
		return nil, err
	}
	proxyPEM, proxyKey, err := leaf(fpCert, fpKey, pkix.Name{CommonName: frontProxyClientName}, x509.ExtKeyUsageClientAuth, nil, nil)
	if err != nil {
		return nil, err
	}
	if err := writeCertKey(p.proxyClientCert, p.proxyClientKey, proxyPEM, proxyKey); err != nil {
		return nil, err
	}

	saKey, err := newKey()
	if err != nil {
		return nil, err
	}
	saKeyPEM, err := pemKey(saKey)
	if err != nil {
		return nil, err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(saKey.Public())
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saKey, saKeyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := os.WriteFile(p.saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600); err != nil {
		return nil, err
	}
	return p, nil
}

func newKey() (*ecdsa.PrivateKey, error) {
	return ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
}

// sign issues template for pub, signed by parent's key (self-signed when
// parent is nil), and returns the DER and the parsed certificate.
func sign(template *x509.Certificate, pub crypto.PublicKey, parent *x509.Certificate, parentKey crypto.Signer) ([]byte, *x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	template.SerialNumber = serial
	if parent == nil {
		parent = template
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, pub, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	return der, cert, err
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func pemKey(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), nil
}

func writeCertKey(certPath, keyPath string, certPEM []byte, key *ecdsa.PrivateKey) error {
	keyPEM, err := pemKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(certPath, certPEM, 0o600); err != nil {
		return err
	}
	return os.WriteFile(keyPath, keyPEM, 0o600)
}
