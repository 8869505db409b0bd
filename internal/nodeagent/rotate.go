package nodeagent

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	mathrand "math/rand/v2"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
)

// renewTimeout bounds one renewal: creating its CSR and waiting for it to
// be approved and signed. A CSR nobody approves is left to
// kube-controller-manager's CSR cleaner, and the next attempt makes a new
// one.
const renewTimeout = 5 * time.Minute

// rotationDeadline is when a certificate valid from notBefore to notAfter
// is renewed: after 70 to 90 % of its lifetime, at a point chosen by
// jitter (in [0, 1)), as the kubelet's certificate manager does, so that
// nodes that joined together do not all renew at once.
func rotationDeadline(notBefore, notAfter time.Time, jitter float64) time.Time {
	total := notAfter.Sub(notBefore)
	return notBefore.Add(time.Duration(float64(total) * (0.7 + 0.2*jitter)))
}

// RotateCertificates renews the node's client certificate until ctx ends,
// as the kubelet does with --rotate-certificates: at its rotation
// deadline it asks for a new certificate for a new key with a CSR made
// with the current certificate (signer kube-apiserver-client-kubelet;
// kube-controller-manager's csrapproving controller approves a node's
// renewal of its own certificate, the selfnodeclient rule), records key
// and certificate on the state device and in the certificate directory,
// then switches the client to them. A failed renewal is retried with
// back-off, up to every five minutes, while the current certificate
// lasts. The waits run on Options.Clock; the deadline is computed from
// the wall clock, which the certificate's validity is in.
func (a *Agent) RotateCertificates(ctx context.Context) {
	backoff := a.renewBackoff()
	for {
		leaf := a.creds.leaf()
		deadline := rotationDeadline(leaf.NotBefore, leaf.NotAfter, mathrand.Float64())
		a.opts.Logf("client certificate valid until %s; renewing it at %s", leaf.NotAfter.UTC().Format(time.RFC3339), deadline.UTC().Format(time.RFC3339))
		if !a.sleep(ctx, time.Until(deadline)) {
			return
		}
		for {
			err := a.renewCertificate(ctx)
			if err == nil {
				backoff = a.renewBackoff()
				break
			}
			if ctx.Err() != nil {
				return
			}
			d := backoff.Step()
			a.opts.Logf("renewing the client certificate failed, retrying in %s: %v", d, err)
			if !a.sleep(ctx, d) {
				return
			}
		}
	}
}

func (a *Agent) renewBackoff() wait.Backoff {
	return wait.Backoff{Duration: a.opts.RetryInterval, Factor: 2, Steps: 1 << 30, Cap: 5 * time.Minute}
}

// sleep waits d on Options.Clock; false when ctx ended first.
func (a *Agent) sleep(ctx context.Context, d time.Duration) bool {
	t := a.opts.Clock.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C():
		return true
	}
}

// renewCertificate gets a new certificate and key for the node, keeps
// them where a restart or reboot finds them, and switches the client.
func (a *Agent) renewCertificate(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, renewTimeout)
	defer cancel()
	begin := time.Now()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	old := a.creds.leaf()
	csrPEM, err := certutil.MakeCSR(key, &old.Subject, nil, nil)
	if err != nil {
		return fmt.Errorf("making the CSR: %w", err)
	}
	name, uid, err := csr.RequestCertificateWithContext(ctx, a.client, csrPEM, csrName(a.cfg.NodeName, csrPEM),
		certificatesv1.KubeAPIServerClientKubeletSignerName, nil, nodeUsages, key)
	if err != nil {
		return fmt.Errorf("creating the CSR: %w", err)
	}
	certPEM, err := csr.WaitForCertificate(ctx, a.client, name, uid)
	if err != nil {
		return fmt.Errorf("waiting for CSR %s to be approved and signed: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return err
	}
	keyPEM := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	// Recorded before it is used: a reboot right after the switch comes
	// back with the certificate the API server last saw.
	if err := a.saveCredentials(certPEM, keyPEM); err != nil {
		return fmt.Errorf("recording the new certificate on the state device: %w", err)
	}
	if err := writeCredentials(a.opts.CertDir, a.cfg, certPEM, keyPEM); err != nil {
		return fmt.Errorf("writing the new certificate into %s: %w", a.opts.CertDir, err)
	}
	if err := a.creds.set(certPEM, keyPEM); err != nil {
		return err
	}
	leaf := a.creds.leaf()
	a.opts.Logf("client certificate renewed through CSR %s after %s (serial %s, valid until %s)", name,
		time.Since(begin).Round(time.Millisecond), leaf.SerialNumber, leaf.NotAfter.UTC().Format(time.RFC3339))
	return nil
}
