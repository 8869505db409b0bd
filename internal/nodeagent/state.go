package nodeagent

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
)

// State is what the agent keeps across reboots on its state device (the
// libvirt driver's small writable volume, docs/providers/libvirt.md): the
// credentials it joined with, since the bootstrap token is deleted once
// the Node has joined, and the Kubernetes version it runs, which an
// in-place update changes (docs/in-place-updates.md).
type State struct {
	// NodeName is the Node the credentials are for.
	NodeName string `json:"nodeName"`
	// Certificate and Key are the node's client certificate and key, PEM.
	Certificate []byte `json:"certificate"`
	Key         []byte `json:"key"`
	// Version is the Kubernetes version the node runs, reported as its
	// kubeletVersion: the user data's at the first boot, an in-place
	// update's afterwards. Empty: the agent's built-in KubeletVersion.
	Version string `json:"version,omitempty"`
}

// restoreState reads the state device, if the agent has one, and puts the
// credentials it holds for this node into the certificate directory (a
// tmpfs in the VM, empty after a reboot), where reuseCredentials finds
// them. A record for another node is ignored (it is overwritten once this
// node has its own credentials); an unreadable one is an error, retried
// with the bootstrap: the agent does not forget who it is.
func restoreState(cfg JoinConfig, opts Options) (*State, error) {
	if opts.StatePath == "" {
		return nil, nil
	}
	st, err := ReadState(opts.StatePath)
	if err != nil || st == nil {
		return nil, err
	}
	if st.NodeName != cfg.NodeName {
		opts.Logf("the state device %s is for Node %s, not %s: ignored", opts.StatePath, st.NodeName, cfg.NodeName)
		return nil, nil
	}
	if len(st.Certificate) > 0 && len(st.Key) > 0 {
		if err := writeCredentials(opts.CertDir, cfg, st.Certificate, st.Key); err != nil {
			return nil, err
		}
	}
	opts.Logf("state of Node %s read from %s (version %q)", st.NodeName, opts.StatePath, st.Version)
	return st, nil
}

// saveCredentials records the node's credentials on the state device, if
// the agent has one and they are new, keeping the recorded version.
func (a *Agent) saveCredentials(certPEM, keyPEM []byte) error {
	a.stateMu.Lock()
	defer a.stateMu.Unlock()
	if a.opts.StatePath == "" || (a.state != nil && bytes.Equal(a.state.Certificate, certPEM) && bytes.Equal(a.state.Key, keyPEM)) {
		return nil
	}
	next := &State{NodeName: a.cfg.NodeName, Certificate: certPEM, Key: keyPEM}
	if a.state != nil {
		next.Version = a.state.Version
	}
	if err := WriteState(a.opts.StatePath, next); err != nil {
		return err
	}
	a.state = next
	a.opts.Logf("credentials of Node %s saved to %s", next.NodeName, a.opts.StatePath)
	return nil
}

// StateSerial is the serial of the state device: the libvirt driver gives
// its state volume this serial, and the agent finds the disk by it.
const StateSerial = "millwright-state"

// FindStateDevice returns the /dev path of the virtio disk whose serial
// is StateSerial, looking in sysBlock (/sys/block); "" when there is none.
// The disks exist once virtio_blk is loaded (it probes them as it loads).
func FindStateDevice(sysBlock string) string {
	disks, _ := filepath.Glob(filepath.Join(sysBlock, "vd*"))
	for _, d := range disks {
		serial, _ := os.ReadFile(filepath.Join(d, "serial"))
		if strings.TrimSpace(string(serial)) == StateSerial {
			return "/dev/" + filepath.Base(d)
		}
	}
	return ""
}
