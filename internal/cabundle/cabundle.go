// Package cabundle is the one rule for the CA bundle a joining node
// trusts the target cluster's API server with. The TokenBootstrapConfig
// provider applies it before it makes a bootstrap token, and
// millwright-node-agent before it spends one: a bundle the agent cannot
// use after its TLS bootstrap must never get that far
// (docs/providers/node-agent.md).
package cabundle

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"errors"
)

// Errors Parse returns.
var (
	// ErrMissing: no bundle at all. A node does not fall back on its
	// system roots: the initramfs of millwright-node-agent has none, and
	// the node's own client pins the cluster's CA.
	ErrMissing = errors.New("no CA bundle: the API server's CA is required")
	// ErrNotPEM: something other than PEM certificates.
	ErrNotPEM = errors.New("the CA bundle is not a PEM bundle of certificates")
)

// Parse returns the certificates of bundle as a pool: one or more PEM
// CERTIFICATE blocks that parse, and nothing else but white space.
func Parse(bundle []byte) (*x509.CertPool, error) {
	if len(bytes.TrimSpace(bundle)) == 0 {
		return nil, ErrMissing
	}
	pool := x509.NewCertPool()
	n := 0
	rest := bundle
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return nil, ErrNotPEM
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, ErrNotPEM
		}
		pool.AddCert(cert)
		n++
	}
	if n == 0 || len(bytes.TrimSpace(rest)) != 0 {
		return nil, ErrNotPEM
	}
	return pool, nil
}
