package driver

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
)

// Environment variables ServeEndpoint reads the plugin's mutual TLS files
// from when it is given no WithServerTLS: a program built on pkg/driver
// serves mutual TLS without a flag of its own (docs/security.md, "The
// driver endpoint").
const (
	TLSCertEnv     = "MILLWRIGHT_DRIVER_TLS_CERT"
	TLSKeyEnv      = "MILLWRIGHT_DRIVER_TLS_KEY"
	TLSClientCAEnv = "MILLWRIGHT_DRIVER_TLS_CLIENT_CA"
)

// TLSFiles names the PEM files of one side of a mutual TLS connection
// between the manager and a driver plugin.
type TLSFiles struct {
	// CA holds the certificates the peer's certificate must chain to: the
	// plugin accepts only clients with a certificate from it, the manager
	// only a plugin with one.
	CA string
	// Cert and Key are this side's certificate (chain) and private key.
	Cert, Key string
}

// IsZero says no file is named: plaintext.
func (f TLSFiles) IsZero() bool { return f == TLSFiles{} }

// tlsFromEnv reads the plugin's files from TLSCertEnv, TLSKeyEnv and
// TLSClientCAEnv; all empty is plaintext.
func tlsFromEnv() TLSFiles {
	return TLSFiles{CA: os.Getenv(TLSClientCAEnv), Cert: os.Getenv(TLSCertEnv), Key: os.Getenv(TLSKeyEnv)}
}

// load reads the files. TLS without a CA or without a certificate is
// refused: a plugin that does not check its callers, or a manager that
// cannot prove who it is, is what mutual TLS is there to prevent.
func (f TLSFiles) load(what string) (tls.Certificate, *x509.CertPool, error) {
	if f.CA == "" || f.Cert == "" || f.Key == "" {
		return tls.Certificate{}, nil, fmt.Errorf("%s: mutual TLS needs a CA, a certificate and a key, got CA %q, certificate %q, key %q", what, f.CA, f.Cert, f.Key)
	}
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	pem, err := os.ReadFile(f.CA)
	if err != nil {
		return tls.Certificate{}, nil, fmt.Errorf("%s: %w", what, err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return tls.Certificate{}, nil, fmt.Errorf("%s: no PEM certificate in the CA file %s", what, f.CA)
	}
	return cert, pool, nil
}

// keyPair reads f's certificate and key again: at each new connection, so
// that a renewed certificate (cert-manager rewrites the mounted Secret's
// files) is used without a restart. The CA is read once, at start.
func (f TLSFiles) keyPair() (*tls.Certificate, error) {
	cert, err := tls.LoadX509KeyPair(f.Cert, f.Key)
	if err != nil {
		return nil, err
	}
	return &cert, nil
}

// serverCredentials are the plugin's: its certificate, and a client
// certificate from f.CA required of every connection (TLS 1.3).
func serverCredentials(f TLSFiles) (credentials.TransportCredentials, error) {
	_, pool, err := f.load("driver TLS")
	if err != nil {
		return nil, err
	}
	return credentials.NewTLS(&tls.Config{
		MinVersion:     tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return f.keyPair() },
		ClientAuth:     tls.RequireAndVerifyClientCert,
		ClientCAs:      pool,
	}), nil
}

// WithTLS makes the client speak mutual TLS to the plugin: it presents
// f.Cert and accepts only a plugin whose certificate chains to f.CA and
// names the endpoint's host. Meant for a plugin reached over TCP (a unix
// socket's own permissions already decide who may call).
func WithTLS(f TLSFiles) DialOption {
	return func(o *dialOptions) { o.tls = &f }
}

// clientCredentials are the manager's for the plugin.
func clientCredentials(f TLSFiles) (grpc.DialOption, error) {
	// Read at start to fail early; each connection reads the pair again.
	_, pool, err := f.load("driver client TLS")
	if err != nil {
		return nil, err
	}
	return grpc.WithTransportCredentials(credentials.NewTLS(&tls.Config{
		MinVersion:           tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return f.keyPair() },
		RootCAs:              pool,
	})), nil
}

// ServeOption configures ServeEndpoint.
type ServeOption func(*serveOptions)

type serveOptions struct {
	tls *TLSFiles
}

// WithServerTLS serves mutual TLS: the plugin presents f.Cert and refuses
// every client without a certificate from f.CA. Without this option
// ServeEndpoint reads the files from TLSCertEnv, TLSKeyEnv and
// TLSClientCAEnv, and serves plaintext when all three are empty; a zero f
// serves plaintext whatever the environment says.
func WithServerTLS(f TLSFiles) ServeOption {
	return func(o *serveOptions) { o.tls = &f }
}
