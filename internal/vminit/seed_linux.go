package vminit

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/util/wait"
)

// The NoCloud seed: an ISO9660 filesystem labelled cidata on a virtio
// disk whose serial is cidata.
const (
	seedLabel = "cidata"
	// SeedDir is where the seed is mounted, read-only.
	SeedDir = "/run/seed"
)

// iso9660 keeps the volume identifier (32 bytes, space-padded) at byte 40
// of the primary volume descriptor, which starts at sector 16 (of 2048
// bytes).
const (
	pvdOffset = 16 * 2048
	labelAt   = pvdOffset + 40
	labelLen  = 32
)

// mountSeed waits (up to timeout: the disks appear asynchronously once
// virtio_blk is loaded) for the /sys/block/vd* disk attached as the seed
// (serial cidata) holding an ISO9660 volume labelled cidata, and mounts it
// read-only on SeedDir.
func mountSeed(ctx context.Context, timeout time.Duration) (string, error) {
	var dev string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(context.Context) (bool, error) {
		dev = findSeed("/sys/block", "/dev")
		return dev != "", nil
	})
	if err != nil {
		return "", fmt.Errorf("no virtio disk with serial %q and an ISO9660 volume labelled so within %s", seedLabel, timeout)
	}
	if err := os.MkdirAll(SeedDir, 0o755); err != nil {
		return "", err
	}
	if err := unix.Mount(dev, SeedDir, "iso9660", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return "", fmt.Errorf("mounting %s on %s: %w", dev, SeedDir, err)
	}
	return dev, nil
}

// findSeed is the seed's device in devDir: the virtio disk of sysBlock
// whose serial is cidata, which the driver gives the seed it attaches and
// no other disk, and whose ISO9660 label is cidata. A label alone is not
// enough: a disk whose contents are another VM's seed (an image made of
// one) would make this VM boot as that VM's Node, with its token.
func findSeed(sysBlock, devDir string) string {
	disks, _ := filepath.Glob(filepath.Join(sysBlock, "vd*"))
	for _, d := range disks {
		dev := filepath.Join(devDir, filepath.Base(d))
		serial, _ := os.ReadFile(filepath.Join(d, "serial"))
		if strings.TrimSpace(string(serial)) != seedLabel {
			continue
		}
		if label, err := isoLabel(dev); err == nil && strings.EqualFold(label, seedLabel) {
			return dev
		}
	}
	return ""
}

// isoLabel reads the volume identifier of the ISO9660 filesystem on dev.
func isoLabel(dev string) (string, error) {
	f, err := os.Open(dev)
	if err != nil {
		return "", err
	}
	defer func() { _ = f.Close() }()
	pvd := make([]byte, 6)
	if _, err := f.ReadAt(pvd, pvdOffset); err != nil {
		return "", err
	}
	// Type 1 (primary), then the standard identifier.
	if !bytes.Equal(pvd, []byte("\x01CD001")) {
		return "", errors.New("no ISO9660 primary volume descriptor")
	}
	label := make([]byte, labelLen)
	if _, err := f.ReadAt(label, labelAt); err != nil {
		return "", err
	}
	return strings.TrimRight(string(label), " \x00"), nil
}
