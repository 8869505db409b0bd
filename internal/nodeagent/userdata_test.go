package nodeagent

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/millwright-dev/millwright/internal/provider/tokenbootstrap"
)

// Pure parsing: the join itself is tested against a real cluster in
// agent_test.go.
func TestParseSeed(t *testing.T) {
	if VersionPath != tokenbootstrap.VersionPath {
		t.Fatalf("the agent reads %s, the provider writes %s", VersionPath, tokenbootstrap.VersionPath)
	}
	ca := testCA(t)
	ud, err := tokenbootstrap.UserData(tokenbootstrap.JoinData{Server: "https://10.0.2.100:6443", CA: ca, Token: "abcdef.0123456789abcdef", NodeName: "m-1", Version: "v1.35.2"})
	if err != nil {
		t.Fatal(err)
	}
	const md = "instance-id: uid-1\nlocal-hostname: m-1\nprovider-id: p://m-1\n"
	got, err := ParseSeed(ud, []byte(md))
	if err != nil {
		t.Fatal(err)
	}
	want := JoinConfig{Server: "https://10.0.2.100:6443", CA: ca, Token: "abcdef.0123456789abcdef", NodeName: "m-1", ProviderID: "p://m-1", InstanceID: "uid-1", Version: "v1.35.2"}
	if got.Version != want.Version || got.Server != want.Server || string(got.CA) != string(want.CA) || got.Token != want.Token || got.NodeName != want.NodeName || got.ProviderID != want.ProviderID || got.InstanceID != want.InstanceID {
		t.Errorf("ParseSeed = %+v, want %+v", got, want)
	}

	// The provider renamed the Node (another namespace's Machine of the
	// same name has one): meta-data's name wins over the user data's.
	renamed, err := ParseSeed(ud, []byte("local-hostname: m-1-ab12c\nprovider-id: p://m-1\n"))
	if err != nil || renamed.NodeName != "m-1-ab12c" {
		t.Errorf("ParseSeed with a renamed Node = %q, %v; want m-1-ab12c", renamed.NodeName, err)
	}

	for _, tc := range []struct {
		name, userData, metaData, wantErr string
	}{
		{"no provider-id", string(ud), "local-hostname: m-1\n", "no provider-id"},
		{"not a version", strings.Replace(string(ud), "v1.35.2", "1.35", 1), md, "is not a Kubernetes version"},
		{"not cloud-config", "#!/bin/sh\necho hi\n", md, "not a #cloud-config"},
		{"no bootstrap kubeconfig", "#cloud-config\nwrite_files: []\n", md, "no write_files entry for " + BootstrapKubeconfigPath},
		{"no node name", "#cloud-config\nwrite_files:\n- path: " + BootstrapKubeconfigPath + "\n  content: |\n" + indent(kubeconfigOf(t, ud)), "provider-id: p://m-1\n", "no node name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSeed([]byte(tc.userData), []byte(tc.metaData))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("ParseSeed: %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}
}

// kubeconfigOf is the bootstrap kubeconfig a rendered user data holds.
func kubeconfigOf(t *testing.T, ud []byte) string {
	t.Helper()
	var cc cloudConfig
	if err := yaml.Unmarshal(ud, &cc); err != nil {
		t.Fatal(err)
	}
	for _, f := range cc.WriteFiles {
		if f.Path == BootstrapKubeconfigPath {
			return f.Content
		}
	}
	t.Fatal("no bootstrap kubeconfig")
	return ""
}

func indent(s string) string {
	var b strings.Builder
	for line := range strings.Lines(s) {
		b.WriteString("    " + line)
	}
	return b.String()
}

// testCA is a self-signed CA certificate, PEM: what a seed's
// certificate-authority-data holds.
func testCA(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-ca"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
