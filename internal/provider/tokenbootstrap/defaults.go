package tokenbootstrap

import (
	"bytes"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/url"
	"os"

	"k8s.io/client-go/rest"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
)

// Defaults are the join settings of configs that leave them unset.
type Defaults struct {
	// APIServer is the https URL a booting VM reaches the target cluster at.
	APIServer string
	// CABundle is the PEM bundle the kubelet trusts the API server with.
	CABundle []byte
}

// DefaultsFor derives the defaults from the target cluster's rest.Config
// (the manager's --target-kubeconfig, else its control cluster): its URL,
// unless apiServer overrides it, and its CA. The override matters in a
// cluster, where the manager's own URL is the in-cluster Service address
// that a VM outside cannot reach.
func DefaultsFor(cfg *rest.Config, apiServer string) (Defaults, error) {
	d := Defaults{APIServer: apiServer, CABundle: cfg.CAData}
	if d.APIServer == "" {
		u, _, err := rest.DefaultServerUrlFor(cfg)
		if err != nil {
			return Defaults{}, fmt.Errorf("the target cluster's API server URL: %w", err)
		}
		d.APIServer = u.String()
	}
	if len(d.CABundle) == 0 && cfg.CAFile != "" {
		ca, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return Defaults{}, fmt.Errorf("the target cluster's CA: %w", err)
		}
		d.CABundle = ca
	}
	return d, nil
}

// joinSettings is what the user data is made of: the spec's values, else
// the controller's defaults. problem says why they can never work, for a
// terminal failure; a CA bundle may be empty (the VM's system roots).
func joinSettings(spec *bootstrapv1.TokenBootstrapConfigSpec, d Defaults) (server string, ca []byte, problem string) {
	server, ca = spec.APIServer, spec.CABundle
	if server == "" {
		server = d.APIServer
	}
	if len(ca) == 0 {
		ca = d.CABundle
	}
	if server == "" {
		return "", nil, "spec.apiServer is unset and the controller has no default API server URL"
	}
	if u, err := url.Parse(server); err != nil || u.Scheme != "https" || u.Host == "" {
		return "", nil, fmt.Sprintf("API server URL %q is not an https URL with a host", server)
	}
	if len(ca) > 0 && !validPEM(ca) {
		return "", nil, "the CA bundle is not a PEM bundle of certificates"
	}
	return server, ca, ""
}

// validPEM reports whether b holds at least one PEM certificate and
// nothing else.
func validPEM(b []byte) bool {
	n := 0
	for {
		var block *pem.Block
		block, b = pem.Decode(b)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return false
		}
		if _, err := x509.ParseCertificate(block.Bytes); err != nil {
			return false
		}
		n++
	}
	return n > 0 && len(bytes.TrimSpace(b)) == 0
}
