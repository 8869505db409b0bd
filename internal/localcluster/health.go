package localcluster

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"strings"
)

// httpProbe returns a probe passing when GET url answers 200 with a body
// containing want. client is nil for plain HTTP.
func httpProbe(client *http.Client, url, want string) func(context.Context) error {
	if client == nil {
		client = http.DefaultClient
	}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), want) {
			return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
		}
		return nil
	}
}

// tlsClient reaches the components' secure ports: it verifies their
// serving certificate against the cluster's CA (they all serve the one
// localcluster generated, so no need to skip verification) and presents
// the administrator's certificate, which any authorizer accepts.
func (c *Cluster) tlsClient() (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.pki.caPEM) {
		return nil, fmt.Errorf("parsing the cluster CA")
	}
	admin := c.pki.clients[adminUser]
	cert, err := tls.X509KeyPair(admin.certPEM, admin.keyPEM)
	if err != nil {
		return nil, err
	}
	return &http.Client{Transport: &http.Transport{
		TLSClientConfig:   &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12},
		DisableKeepAlives: true, // a probe every 200ms; no idle connections to a process about to be stopped
	}}, nil
}
