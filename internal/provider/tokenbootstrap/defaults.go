package tokenbootstrap

import (
	"errors"
	"fmt"
	"net/url"
	"os"

	"k8s.io/client-go/rest"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/internal/cabundle"
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
// terminal failure before any token is made. The CA bundle follows the
// rule millwright-node-agent applies before it uses the token
// (cabundle.Parse): required, PEM certificates only.
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
	if _, err := cabundle.Parse(ca); errors.Is(err, cabundle.ErrMissing) {
		return "", nil, "spec.caBundle is unset and the target cluster's kubeconfig has no CA: " + err.Error()
	} else if err != nil {
		return "", nil, err.Error()
	}
	return server, ca, ""
}
