package libvirt

import (
	"bytes"
	"fmt"

	"github.com/kdomanski/iso9660"
	"sigs.k8s.io/yaml"
)

// Seed is what a VM is told at boot, as a cloud-init NoCloud seed: an
// ISO 9660 image labelled SeedLabel holding the files user-data and
// meta-data (see docs/providers/libvirt.md for the attachment).
type Seed struct {
	// UserData is the Secret's "userData", as given.
	UserData []byte
	// MetaData is meta-data's content.
	MetaData MetaData
}

// MetaData is the seed's meta-data: cloud-init's NoCloud keys plus
// Millwright's provider-id.
type MetaData struct {
	// InstanceID is the Machine's UID: a new Machine is a new instance.
	InstanceID string `json:"instance-id"`
	// LocalHostname is the Node's name.
	LocalHostname string `json:"local-hostname"`
	// ProviderID is the providerID the Node must report (Millwright's
	// extension key; cloud-init ignores it).
	ProviderID string `json:"provider-id"`
}

// SeedLabel is the seed's ISO 9660 volume label, which cloud-init's NoCloud
// source (and Millwright's init) look for; it is also the seed disk's
// serial.
const SeedLabel = "cidata"

// Seed file names.
const (
	seedUserData = "user-data"
	seedMetaData = "meta-data"
)

// ISO returns the seed as an ISO 9660 image.
func (s Seed) ISO() ([]byte, error) {
	meta, err := yaml.Marshal(s.MetaData)
	if err != nil {
		return nil, err
	}
	w, err := iso9660.NewWriter()
	if err != nil {
		return nil, fmt.Errorf("seed image: %w", err)
	}
	defer func() { _ = w.Cleanup() }()
	for name, data := range map[string][]byte{seedUserData: s.UserData, seedMetaData: meta} {
		if err := w.AddFile(bytes.NewReader(data), name); err != nil {
			return nil, fmt.Errorf("seed image: adding %s: %w", name, err)
		}
	}
	var out bytes.Buffer
	if err := w.WriteTo(&out, SeedLabel); err != nil {
		return nil, fmt.Errorf("seed image: %w", err)
	}
	return out.Bytes(), nil
}
