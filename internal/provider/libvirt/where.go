package libvirt

import (
	"encoding/json"
	"strings"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// lastKnownState is what the driver keeps on a Machine between calls
// (status.lastKnownState, which the manager hands back on every call).
type lastKnownState struct {
	// URI is the libvirt daemon the Machine's VM was made on.
	URI string `json:"uri,omitempty"`
}

func (s lastKnownState) encode() string {
	b, _ := json.Marshal(s) // a struct of strings: cannot fail
	return string(b)
}

// recordedURI is the libvirt daemon m's lastKnownState says its VM was
// made on; "" when it says none (a Machine made before the driver
// recorded it, or whose create's answer was lost).
func recordedURI(m *v1alpha1.Machine) string {
	var s lastKnownState
	if m == nil || m.Spec.ProviderID == "" || json.Unmarshal([]byte(m.Status.LastKnownState), &s) != nil {
		return ""
	}
	return s.URI
}

// machineURI is the libvirt daemon a call about m goes to: the one its VM
// was made on when m records it, else the class's. A class's uri edited
// under running VMs must neither lose them (a deletion that looks on the
// new daemon, finds nothing and answers OK) nor give a Machine a second
// VM on the new daemon (docs/providers/libvirt.md, "Editing a class").
func machineURI(m *v1alpha1.Machine, s *spec) string {
	if u := recordedURI(m); u != "" {
		return u
	}
	return s.URI
}

// providerIDHost is the host name a providerID of this driver names.
func providerIDHost(providerID string) (string, bool) {
	rest, ok := strings.CutPrefix(providerID, "libvirt://")
	if !ok {
		return "", false
	}
	host, _, ok := strings.Cut(rest, "/")
	return host, ok && host != ""
}

// elsewhere answers a call about m whose domain name the connection c does
// not have: when m's providerID names another host, its VM was made on
// another libvirt daemon than the one the class names now, and is neither
// deleted nor replaced from here (FailedPrecondition, a person decides).
// nil when nothing says the VM is elsewhere: it is gone.
func (c *conn) elsewhere(m *v1alpha1.Machine, name string) error {
	host, ok := providerIDHost(m.Spec.ProviderID)
	if !ok || host == c.host {
		return nil
	}
	return driver.Errorf(driver.FailedPrecondition,
		"Machine %s/%s's VM %s was made on host %s, and libvirt at %s (host %s) has no domain %s: "+
			"the class's uri has changed since. Nothing is created or deleted here: set the class's uri back to that host's libvirt, "+
			"or delete the domain there by hand and then the Machine's finalizer (docs/providers/libvirt.md, \"Editing a class\")",
		m.Namespace, m.Name, m.Spec.ProviderID, host, c.uri, c.host, name)
}
