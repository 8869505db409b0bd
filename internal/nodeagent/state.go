package nodeagent

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
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

// The record on the device, at offset 0, all integers big-endian:
//
//	magic (8 bytes) | length n (uint32) | JSON of State (n bytes) | CRC-32 (IEEE) of the JSON (uint32)
//
// A device that does not start with the magic (a new, zeroed volume)
// holds no state. One with the magic and a bad length or checksum is
// an error: the agent says so rather than forgetting who it is.
var stateMagic = [8]byte{'M', 'W', 'S', 'T', 'A', 'T', 'E', 1}

// maxStateSize bounds the JSON (a record is about 2 KiB).
const maxStateSize = 64 << 10

// ReadState reads the state record of the device or file at path; nil
// without error when it holds none.
func ReadState(path string) (*State, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var head [12]byte
	if _, err := io.ReadFull(f, head[:]); errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the state of %s: %w", path, err)
	}
	if !bytes.Equal(head[:8], stateMagic[:]) {
		return nil, nil
	}
	n := binary.BigEndian.Uint32(head[8:])
	if n > maxStateSize {
		return nil, fmt.Errorf("the state record of %s says %d bytes, more than %d", path, n, maxStateSize)
	}
	body := make([]byte, n+4)
	if _, err := io.ReadFull(f, body); err != nil {
		return nil, fmt.Errorf("reading the state record of %s: %w", path, err)
	}
	data := body[:n]
	if crc32.ChecksumIEEE(data) != binary.BigEndian.Uint32(body[n:]) {
		return nil, fmt.Errorf("the state record of %s fails its checksum", path)
	}
	var s State
	if err := json.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("the state record of %s: %w", path, err)
	}
	return &s, nil
}

// WriteState writes s as the record of the device or file at path and
// syncs it: once it returns, a reboot finds s.
func WriteState(path string, s *State) error {
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if len(data) > maxStateSize {
		return fmt.Errorf("the state record is %d bytes, more than %d", len(data), maxStateSize)
	}
	rec := make([]byte, 0, 16+len(data))
	rec = append(rec, stateMagic[:]...)
	rec = binary.BigEndian.AppendUint32(rec, uint32(len(data)))
	rec = append(rec, data...)
	rec = binary.BigEndian.AppendUint32(rec, crc32.ChecksumIEEE(data))
	// No O_CREATE: the device is the provider's; a missing one is an error.
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteAt(rec, 0); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing the state to %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("syncing the state to %s: %w", path, err)
	}
	return f.Close()
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
