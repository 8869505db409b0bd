package manager

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// infoOnly is a driver that answers GetPluginInfo; nothing else is called.
type infoOnly struct{ driver.Driver }

func (infoOnly) GetPluginInfo(context.Context, *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	return &driver.GetPluginInfoResponse{Name: "remote", Version: "v0.0.1"}, nil
}

// pki writes a CA and, signed by it, a server certificate for 127.0.0.1
// and a client certificate; it returns the files of each side.
func pki(t *testing.T) (server, client driver.TLSFiles) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, typ string, der []byte) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	key := func() *ecdsa.PrivateKey {
		k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	caKey := key()
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	ca, _ := x509.ParseCertificate(caDER)
	caFile := write("ca.crt", "CERTIFICATE", caDER)
	issue := func(name string, usage x509.ExtKeyUsage, ips ...net.IP) driver.TLSFiles {
		k := key()
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(int64(len(name))), Subject: pkix.Name{CommonName: name},
			NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
			KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{usage}, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &k.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		kder, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		return driver.TLSFiles{CA: caFile, Cert: write(name+".crt", "CERTIFICATE", der), Key: write(name+".key", "PRIVATE KEY", kder)}
	}
	return issue("driver", x509.ExtKeyUsageServerAuth, net.ParseIP("127.0.0.1")), issue("manager", x509.ExtKeyUsageClientAuth)
}

// The manager dials a driver over tcp:// with --driver-tls-*: with them it
// connects to a driver serving mutual TLS; without them the driver never
// answers it, and the start fails.
func TestDriverOverMutualTLS(t *testing.T) {
	server, client := pki(t)
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	endpoint := "tcp://" + lis.Addr().String()
	lis.Close()
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- driver.ServeEndpoint(ctx, endpoint, infoOnly{}, driver.WithServerTLS(server)) }()
	t.Cleanup(func() {
		cancel()
		if err := <-served; err != nil {
			t.Errorf("ServeEndpoint: %v", err)
		}
	})

	o := NewOptions()
	o.Drivers = []DriverSpec{{Name: "remote", Endpoint: endpoint}}
	o.DriverStartupTimeout = 30 * time.Second
	o.DriverTLS = client
	ds, err := o.connectDrivers(context.Background(), logr.Discard(), nil)
	if err != nil {
		t.Fatalf("with --driver-tls-*: %v", err)
	}
	ds.Close()

	o.DriverTLS = driver.TLSFiles{}
	o.DriverStartupTimeout = 2 * time.Second
	ds, err = o.connectDrivers(context.Background(), logr.Discard(), nil)
	if err == nil {
		ds.Close()
		t.Fatal("without --driver-tls-*: connected to a driver serving mutual TLS")
	}
	if !strings.Contains(err.Error(), `driver "remote" at `+endpoint+` did not answer GetPluginInfo`) {
		t.Errorf("without --driver-tls-*: %v", err)
	}
}
