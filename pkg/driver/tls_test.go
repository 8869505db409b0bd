package driver_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// testCA is a certificate authority made for one test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	file string // the CA certificate, PEM
	dir  string
}

var serial int64

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func writePEM(t *testing.T, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key := newKey(t)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	ca := &testCA{cert: cert, key: key, file: filepath.Join(dir, "ca.crt"), dir: dir}
	writePEM(t, ca.file, "CERTIFICATE", der)
	return ca
}

// issue writes a certificate for name (a server's host names, or a
// client's) and its key; it returns their paths.
func (ca *testCA) issue(t *testing.T, name string, usage x509.ExtKeyUsage, hosts ...string) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	serial++
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage},
	}
	for _, h := range hosts {
		if ip := net.ParseIP(h); ip != nil {
			tmpl.IPAddresses = append(tmpl.IPAddresses, ip)
		} else {
			tmpl.DNSNames = append(tmpl.DNSNames, h)
		}
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(ca.dir, name+".crt"), filepath.Join(ca.dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", keyDER)
	return certFile, keyFile
}

// freeEndpoint is a TCP endpoint on the loopback nobody listens on now.
func freeEndpoint(t *testing.T) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer lis.Close()
	return "tcp://" + lis.Addr().String()
}

// serveTLS runs ServeEndpoint on TCP until the test ends, with opts; with
// none, the TLS files come from the environment the test set.
func serveTLS(t *testing.T, d driver.Driver, opts ...driver.ServeOption) string {
	t.Helper()
	endpoint := freeEndpoint(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- driver.ServeEndpoint(ctx, endpoint, d, opts...) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("ServeEndpoint: %v", err)
		}
	})
	return endpoint
}

// callUntilServed calls GetPluginInfo until it answers (the server starts
// in the background), failing the test if it never does.
func callUntilServed(t *testing.T, c *driver.Client) *driver.GetPluginInfoResponse {
	t.Helper()
	var info *driver.GetPluginInfoResponse
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		info, last = c.GetPluginInfo(ctx, nil)
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("the plugin never answered over mutual TLS: %v", last)
	}
	return info
}

// countedFake is a fake driver that counts the calls reaching it.
func countedFake(name string) (*fakeDriver, *atomic.Int64) {
	f, n := newFake(name), &atomic.Int64{}
	f.setHandle(func(context.Context, driver.Method, any) (any, error) {
		n.Add(1)
		return &driver.GetPluginInfoResponse{Name: name, Version: "v0.0.1"}, nil
	})
	return f, n
}

// refused checks that a call through c fails without reaching the driver.
func refused(t *testing.T, what string, c *driver.Client, calls *atomic.Int64) {
	t.Helper()
	defer c.Close()
	before := calls.Load()
	_, err := c.GetPluginInfo(context.Background(), nil)
	if err == nil {
		t.Errorf("%s: the call was answered", what)
		return
	}
	if got := status.Code(err); got != codes.Unavailable {
		t.Errorf("%s: %v (%s), want Unavailable", what, err, got)
	}
	if calls.Load() != before {
		t.Errorf("%s: the driver was called", what)
	}
}

func dialWith(t *testing.T, endpoint string, opts ...driver.DialOption) *driver.Client {
	t.Helper()
	c, err := driver.Dial(endpoint, append([]driver.DialOption{driver.WithReadyWait(2 * time.Second)}, opts...)...)
	if err != nil {
		t.Fatalf("Dial: %v", err)
	}
	return c
}

// A plugin serving mutual TLS (its files from the environment, as every
// program built on ServeEndpoint reads them) answers the manager's
// certificate, and refuses a client without a certificate — plaintext or
// TLS — and one whose certificate another CA signed; the manager refuses a
// plugin whose certificate another CA signed.
func TestMutualTLS(t *testing.T) {
	ca, other := newCA(t, "driver-ca"), newCA(t, "other-ca")
	serverCert, serverKey := ca.issue(t, "driver", x509.ExtKeyUsageServerAuth, "127.0.0.1", "localhost")
	clientCert, clientKey := ca.issue(t, "manager", x509.ExtKeyUsageClientAuth)
	otherClientCert, otherClientKey := other.issue(t, "intruder", x509.ExtKeyUsageClientAuth)
	otherServerCert, otherServerKey := other.issue(t, "impostor", x509.ExtKeyUsageServerAuth, "127.0.0.1", "localhost")

	t.Setenv(driver.TLSCertEnv, serverCert)
	t.Setenv(driver.TLSKeyEnv, serverKey)
	t.Setenv(driver.TLSClientCAEnv, ca.file)
	fake, calls := countedFake("tls")
	endpoint := serveTLS(t, fake)

	manager := dialWith(t, endpoint, driver.WithTLS(driver.TLSFiles{CA: ca.file, Cert: clientCert, Key: clientKey}))
	defer manager.Close()
	if info := callUntilServed(t, manager); info.Name != "tls" {
		t.Errorf("GetPluginInfo over mutual TLS: %+v", info)
	}

	refused(t, "a plaintext client", dialWith(t, endpoint), calls)
	pool := x509.NewCertPool()
	pool.AddCert(ca.cert)
	refused(t, "a TLS client without a certificate", dialWith(t, endpoint, driver.WithGRPCDialOptions(
		grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS13})))), calls)
	refused(t, "a client whose certificate another CA signed", dialWith(t, endpoint,
		driver.WithTLS(driver.TLSFiles{CA: ca.file, Cert: otherClientCert, Key: otherClientKey})), calls)

	// The manager's side: a plugin with a certificate of another CA (an
	// impostor at the driver's address) is never called.
	impostor, impostorCalls := countedFake("impostor")
	impostorEndpoint := serveTLS(t, impostor, driver.WithServerTLS(driver.TLSFiles{CA: other.file, Cert: otherServerCert, Key: otherServerKey}))
	refused(t, "a plugin whose certificate another CA signed", dialWith(t, impostorEndpoint,
		driver.WithTLS(driver.TLSFiles{CA: ca.file, Cert: clientCert, Key: clientKey})), impostorCalls)
	// ...which does serve a client of its own CA: the refusal above is the
	// manager's check, not a plugin that was not up yet.
	own := dialWith(t, impostorEndpoint, driver.WithTLS(driver.TLSFiles{CA: other.file, Cert: otherClientCert, Key: otherClientKey}))
	defer own.Close()
	callUntilServed(t, own)
}

// Half a TLS configuration is refused at start, on both sides, naming what
// is missing, rather than falling back to plaintext.
func TestPartialTLSIsRefused(t *testing.T) {
	ca := newCA(t, "driver-ca")
	cert, key := ca.issue(t, "driver", x509.ExtKeyUsageServerAuth, "127.0.0.1")
	for _, f := range []driver.TLSFiles{{Cert: cert, Key: key}, {CA: ca.file, Cert: cert}, {CA: ca.file, Key: key}} {
		err := driver.ServeEndpoint(context.Background(), freeEndpoint(t), newFake("x"), driver.WithServerTLS(f))
		if err == nil || !strings.Contains(err.Error(), "mutual TLS needs a CA, a certificate and a key") {
			t.Errorf("ServeEndpoint with %+v: %v", f, err)
		}
		if _, err := driver.Dial(freeEndpoint(t), driver.WithTLS(f)); err == nil || !strings.Contains(err.Error(), "mutual TLS needs") {
			t.Errorf("Dial with %+v: %v", f, err)
		}
	}
}

// copyFile replaces dst's content with src's, as the kubelet updates a
// mounted Secret.
func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Each side reads its certificate and key again at every new connection:
// a renewed certificate is used without a restart. Replacing a side's
// files with a certificate its peer refuses makes the next connection
// fail; replacing them with a valid renewal makes it work again.
func TestRenewedCertificatesAreRead(t *testing.T) {
	ca, other := newCA(t, "driver-ca"), newCA(t, "other-ca")
	serverCert, serverKey := ca.issue(t, "driver", x509.ExtKeyUsageServerAuth, "127.0.0.1")
	clientCert, clientKey := ca.issue(t, "manager", x509.ExtKeyUsageClientAuth)
	fake, calls := countedFake("renew")
	endpoint := serveTLS(t, fake, driver.WithServerTLS(driver.TLSFiles{CA: ca.file, Cert: serverCert, Key: serverKey}))
	manager := driver.TLSFiles{CA: ca.file, Cert: clientCert, Key: clientKey}
	first := dialWith(t, endpoint, driver.WithTLS(manager))
	callUntilServed(t, first)
	first.Close()

	// The plugin's files now hold a certificate for another host name.
	wrongHost, wrongHostKey := ca.issue(t, "elsewhere", x509.ExtKeyUsageServerAuth, "192.0.2.1")
	copyFile(t, wrongHost, serverCert)
	copyFile(t, wrongHostKey, serverKey)
	refused(t, "after the plugin's certificate was replaced by one for another host", dialWith(t, endpoint, driver.WithTLS(manager)), calls)
	renewed, renewedKey := ca.issue(t, "driver-renewed", x509.ExtKeyUsageServerAuth, "127.0.0.1")
	copyFile(t, renewed, serverCert)
	copyFile(t, renewedKey, serverKey)
	c := dialWith(t, endpoint, driver.WithTLS(manager))
	callUntilServed(t, c)
	c.Close()

	// The manager's files now hold a certificate of another CA.
	intruder, intruderKey := other.issue(t, "intruder", x509.ExtKeyUsageClientAuth)
	copyFile(t, intruder, clientCert)
	copyFile(t, intruderKey, clientKey)
	refused(t, "after the manager's certificate was replaced by another CA's", dialWith(t, endpoint, driver.WithTLS(manager)), calls)
	renewedClient, renewedClientKey := ca.issue(t, "manager-renewed", x509.ExtKeyUsageClientAuth)
	copyFile(t, renewedClient, clientCert)
	copyFile(t, renewedClientKey, clientKey)
	c = dialWith(t, endpoint, driver.WithTLS(manager))
	defer c.Close()
	callUntilServed(t, c)
}
