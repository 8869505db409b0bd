package nodeagent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/millwright-dev/millwright/internal/testenv"
)

func TestRotationDeadline(t *testing.T) {
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	to := from.Add(100 * time.Hour)
	for _, c := range []struct {
		jitter float64
		want   time.Duration
	}{{0, 70 * time.Hour}, {0.5, 80 * time.Hour}, {0.999999, 90 * time.Hour}} {
		got := rotationDeadline(from, to, c.jitter).Sub(from)
		if got < c.want-time.Second || got > c.want {
			t.Errorf("rotationDeadline at jitter %v: %s after notBefore, want %s", c.jitter, got, c.want)
		}
	}
}

// TestCertificateRotation renews a joined node's client certificate
// through the real kube-controller-manager: the rotation loop's wait runs
// on a fake clock, moved past the certificate's lifetime; the CSR is made
// with the node's own certificate, auto-approved (selfnodeclient) and
// signed. Then the new certificate and key are on the state device and in
// the certificate directory, the agent's client authenticates with the new
// certificate (the API server's credential-id of the caller), the Lease
// is still renewed, the loop waits for the next deadline without another
// CSR, and an agent started again from the state device uses the new
// certificate.
func TestCertificateRotation(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	cs := kubernetes.NewForConfigOrDie(cluster.RESTConfig())
	const node, providerID = "vm-rotate", "millwright-libvirt://default/vm-rotate"
	ud, md, _ := seed(t, cs, node, providerID)
	cfg, err := ParseSeed(ud, md)
	if err != nil {
		t.Fatal(err)
	}
	dev := stateDevice(t)
	clk := clocktesting.NewFakeClock(time.Now())
	opts := Options{CertDir: t.TempDir(), StatePath: dev, LeaseDuration: 4 * time.Second, RetryInterval: 200 * time.Millisecond, Clock: clk, Logf: t.Logf}
	a, err := Join(ctx, cfg, opts)
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	rotated, beat := make(chan struct{}), make(chan struct{})
	go func() { defer close(rotated); a.RotateCertificates(runCtx) }()
	go func() { defer close(beat); _ = a.Heartbeat(runCtx) }()
	defer func() { stop(); <-rotated; <-beat }()

	first := a.creds.leaf()
	if id := credentialID(t, a.Client()); id != x509ID(first.Raw) {
		t.Fatalf("before the rotation the API server sees credential %q, want the joined certificate's %q", id, x509ID(first.Raw))
	}
	testenv.Eventually(t, 30*time.Second, "the rotation loop to wait for its deadline", func() (bool, error) { return clk.HasWaiters(), nil })
	clk.Step(first.NotAfter.Sub(first.NotBefore))
	testenv.Eventually(t, time.Minute, "a new client certificate", func() (bool, error) {
		return a.creds.leaf().SerialNumber.Cmp(first.SerialNumber) != 0, nil
	})
	switched := time.Now()
	second := a.creds.leaf()

	csrs := nodeCSRs(t, cs, node)
	if len(csrs) != 1 {
		t.Fatalf("%d CSRs by system:node:%s, want 1", len(csrs), node)
	}
	c := csrs[0]
	if !autoApproved(c) || c.Spec.SignerName != certificatesv1.KubeAPIServerClientKubeletSignerName {
		t.Errorf("the renewal's CSR %s: signer %s, conditions %+v; want kube-apiserver-client-kubelet, AutoApproved", c.Name, c.Spec.SignerName, c.Status.Conditions)
	}
	if !bytes.Equal(pemCertDER(t, c.Status.Certificate), second.Raw) {
		t.Error("the agent's certificate is not the one its CSR was issued")
	}

	st, err := ReadState(dev)
	if err != nil || st == nil {
		t.Fatalf("the state device after the rotation: %v, %v", st, err)
	}
	if !bytes.Equal(pemCertDER(t, st.Certificate), second.Raw) {
		t.Error("the state device does not hold the new certificate")
	}
	if _, err := tls.X509KeyPair(st.Certificate, st.Key); err != nil {
		t.Errorf("the state device's key does not match its certificate: %v", err)
	}
	if onDisk, err := os.ReadFile(filepath.Join(opts.CertDir, certFile)); err != nil || !bytes.Equal(pemCertDER(t, onDisk), second.Raw) {
		t.Errorf("%s does not hold the new certificate (%v)", certFile, err)
	}

	if id := credentialID(t, a.Client()); id != x509ID(second.Raw) {
		t.Errorf("after the rotation the API server sees credential %q, want the new certificate's %q", id, x509ID(second.Raw))
	}
	testenv.Eventually(t, 30*time.Second, "the Lease renewed after the switch", func() (bool, error) {
		l, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, node, metav1.GetOptions{})
		return err == nil && l.Spec.RenewTime != nil && l.Spec.RenewTime.After(switched), err
	})
	testenv.Eventually(t, 30*time.Second, "the rotation loop to wait for the next deadline", func() (bool, error) { return clk.HasWaiters(), nil })
	if n := len(nodeCSRs(t, cs, node)); n != 1 {
		t.Errorf("%d CSRs by system:node:%s after the rotation, want 1", n, node)
	}

	again, err := Join(ctx, cfg, Options{CertDir: t.TempDir(), StatePath: dev, Logf: t.Logf})
	if err != nil {
		t.Fatalf("an agent started again from the state device: %v", err)
	}
	if got := again.creds.leaf(); got.SerialNumber.Cmp(second.SerialNumber) != 0 {
		t.Errorf("an agent started again uses certificate %s, want the rotated %s", got.SerialNumber, second.SerialNumber)
	}
}

// credentialID is how the API server identifies the caller's credential
// (user info extra authentication.kubernetes.io/credential-id).
func credentialID(t *testing.T, c kubernetes.Interface) string {
	t.Helper()
	r, err := c.AuthenticationV1().SelfSubjectReviews().Create(t.Context(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("SelfSubjectReview: %v", err)
	}
	return strings.Join(r.Status.UserInfo.Extra["authentication.kubernetes.io/credential-id"], ",")
}

// x509ID is the API server's credential-id of a client certificate.
func x509ID(der []byte) string {
	sum := sha256.Sum256(der)
	return "X509SHA256=" + hex.EncodeToString(sum[:])
}

// nodeCSRs are the CSRs the node made with its own certificate.
func nodeCSRs(t *testing.T, cs kubernetes.Interface, node string) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	list, err := cs.CertificatesV1().CertificateSigningRequests().List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var mine []certificatesv1.CertificateSigningRequest
	for _, c := range list.Items {
		if c.Spec.Username == "system:node:"+node {
			mine = append(mine, c)
		}
	}
	return mine
}

func autoApproved(c certificatesv1.CertificateSigningRequest) bool {
	for _, cond := range c.Status.Conditions {
		if cond.Type == certificatesv1.CertificateApproved && cond.Status == corev1.ConditionTrue && cond.Reason == "AutoApproved" {
			return len(c.Status.Certificate) > 0
		}
	}
	return false
}

// pemCertDER is the first certificate of a PEM bundle, DER.
func pemCertDER(t *testing.T, data []byte) []byte {
	t.Helper()
	certs, err := certutil.ParseCertsPEM(data)
	if err != nil {
		t.Fatalf("no certificate in %q: %v", data, err)
	}
	return certs[0].Raw
}
