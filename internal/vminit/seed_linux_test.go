package vminit

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/kdomanski/iso9660"
)

// isoLabel reads what an ISO9660 writer (the one the libvirt driver's seed
// uses) puts as the volume label; anything else is no seed.
func TestISOLabel(t *testing.T) {
	dir := t.TempDir()
	seed := filepath.Join(dir, "seed.iso")
	writeSeed(t, seed, []byte("#cloud-config\n"), []byte("instance-id: x\n"))
	if got, err := isoLabel(seed); err != nil || got != seedLabel {
		t.Errorf("isoLabel(seed) = %q, %v; want %q", got, err, seedLabel)
	}

	other := filepath.Join(dir, "disk.img")
	if err := os.WriteFile(other, make([]byte, 64<<10), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := isoLabel(other); err == nil {
		t.Errorf("isoLabel(zeroed disk) = %q, want an error", got)
	}
}

// writeSeed writes a NoCloud seed ISO labelled cidata, as the libvirt
// driver does, with the same library.
func writeSeed(t *testing.T, path string, userData, metaData []byte) {
	t.Helper()
	w, err := iso9660.NewWriter()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Cleanup() }()
	for name, data := range map[string][]byte{"user-data": userData, "meta-data": metaData} {
		if err := w.AddFile(bytes.NewReader(data), name); err != nil {
			t.Fatal(err)
		}
	}
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteTo(f, seedLabel); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// findSeed takes only the disk attached as the seed (serial cidata): a
// disk that carries a seed's filesystem without that serial (an image made
// of another VM's seed) is never the seed.
func TestFindSeedOnlyTakesTheAttachedSeed(t *testing.T) {
	sys, dev := t.TempDir(), t.TempDir()
	disk := func(name, serial string, seed bool) {
		if err := os.MkdirAll(filepath.Join(sys, name), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(sys, name, "serial"), []byte(serial+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if seed {
			writeSeed(t, filepath.Join(dev, name), []byte("#cloud-config\n"), []byte("instance-id: "+name+"\n"))
		} else if err := os.WriteFile(filepath.Join(dev, name), make([]byte, 64<<10), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	disk("vda", "", true) // the boot disk: another VM's seed as an image
	if got := findSeed(sys, dev); got != "" {
		t.Fatalf("findSeed took %s, a disk with a seed's label but not attached as the seed", got)
	}
	disk("vdb", "millwright-state", false)
	disk("vdc", seedLabel, true)
	if got, want := findSeed(sys, dev), filepath.Join(dev, "vdc"); got != want {
		t.Fatalf("findSeed = %q, want the disk attached as the seed %q", got, want)
	}
}
