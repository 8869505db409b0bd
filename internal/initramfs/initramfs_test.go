package initramfs

import (
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cavaliergopher/cpio"
)

// writeModule writes a minimal ELF relocatable object with the .modinfo
// section a kernel module has: what Resolve reads.
func writeModule(t *testing.T, path, depends string) {
	t.Helper()
	modinfo := []byte("license=GPL\x00depends=" + depends + "\x00vermagic=6.1.0\x00")
	shstrtab := []byte("\x00.modinfo\x00.shstrtab\x00")
	const ehsize, shentsize = 64, 64
	modinfoOff := uint64(ehsize)
	shstrOff := modinfoOff + uint64(len(modinfo))
	shoff := shstrOff + uint64(len(shstrtab))
	var buf bytes.Buffer
	hdr := elf.Header64{
		Type: uint16(elf.ET_REL), Machine: uint16(elf.EM_X86_64), Version: uint32(elf.EV_CURRENT),
		Shoff: shoff, Ehsize: ehsize, Shentsize: shentsize, Shnum: 3, Shstrndx: 2,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS], hdr.Ident[elf.EI_DATA], hdr.Ident[elf.EI_VERSION] = byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT)
	sections := []elf.Section64{
		{},
		{Name: 1, Type: uint32(elf.SHT_PROGBITS), Off: modinfoOff, Size: uint64(len(modinfo)), Addralign: 1},
		{Name: 10, Type: uint32(elf.SHT_STRTAB), Off: shstrOff, Size: uint64(len(shstrtab)), Addralign: 1},
	}
	for _, part := range []any{hdr, modinfo, shstrtab, sections} {
		if err := binary.Write(&buf, binary.LittleEndian, part); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// fakeKernel lays out a /lib/modules/<version> like Debian's: modules in
// kernel/ subdirectories, one with a dash in its file name, one built in.
func fakeKernel(t *testing.T) string {
	root := t.TempDir()
	writeModule(t, filepath.Join(root, "kernel/drivers/virtio/virtio_ring.ko"), "")
	writeModule(t, filepath.Join(root, "kernel/drivers/virtio/virtio.ko"), "virtio_ring")
	writeModule(t, filepath.Join(root, "kernel/drivers/virtio/virtio_pci.ko"), "virtio,virtio_ring")
	writeModule(t, filepath.Join(root, "kernel/drivers/net/virtio_net.ko"), "virtio_ring,virtio,net_failover")
	writeModule(t, filepath.Join(root, "kernel/drivers/net/net_failover.ko"), "failover")
	writeModule(t, filepath.Join(root, "kernel/net/core/failover.ko"), "")
	writeModule(t, filepath.Join(root, "kernel/drivers/char/hw_random/virtio-rng.ko"), "virtio,virtio_ring")
	writeModule(t, filepath.Join(root, "kernel/fs/isofs/isofs.ko"), "cdrom")
	writeModule(t, filepath.Join(root, "kernel/unused/unused.ko"), "")
	if err := os.WriteFile(filepath.Join(root, "modules.builtin"), []byte("kernel/drivers/cdrom/cdrom.ko\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return root
}

func TestResolveOrdersDependenciesFirst(t *testing.T) {
	mods, err := Resolve(fakeKernel(t), []string{"virtio_net", "virtio_pci", "virtio_rng", "isofs"})
	if err != nil {
		t.Fatal(err)
	}
	got := Names(mods)
	// cdrom is built in: nothing to load. Each module once, after what it
	// depends on.
	want := []string{"virtio_ring", "virtio", "failover", "net_failover", "virtio_net", "virtio_pci", "virtio_rng", "isofs"}
	if !slices.Equal(got, want) {
		t.Errorf("Resolve = %v, want %v", got, want)
	}
}

func TestResolveMissingModule(t *testing.T) {
	_, err := Resolve(fakeKernel(t), []string{"virtio_blk"})
	if err == nil || !strings.Contains(err.Error(), "virtio_blk") {
		t.Errorf("Resolve(virtio_blk) = %v, want an error naming it", err)
	}
}

func TestBuild(t *testing.T) {
	mods, err := Resolve(fakeKernel(t), []string{"virtio_net"})
	if err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(t.TempDir(), "agent")
	if err := os.WriteFile(agent, []byte("\x7fELF agent"), 0o755); err != nil {
		t.Fatal(err)
	}
	var img bytes.Buffer
	if err := Build(&img, agent, mods); err != nil {
		t.Fatal(err)
	}
	gz, err := gzip.NewReader(&img)
	if err != nil {
		t.Fatal(err)
	}
	r := cpio.NewReader(gz)
	files := map[string][]byte{}
	modes := map[string]cpio.FileMode{}
	var names []string
	for {
		h, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		files[h.Name], modes[h.Name] = data, h.Mode
	}
	if m := modes["init"]; m&cpio.ModeType != cpio.TypeReg || m&cpio.ModePerm != 0o755 || string(files["init"]) != "\x7fELF agent" {
		t.Errorf("init: mode %o, %q; want a regular 0755 file with the agent", m, files["init"])
	}
	for _, dir := range []string{"dev", "proc", "sys", "run", "tmp", "lib/modules"} {
		if modes[dir]&cpio.ModeType != cpio.TypeDir {
			t.Errorf("%s: mode %o, want a directory", dir, modes[dir])
		}
	}
	order := strings.Fields(string(files[strings.TrimPrefix(LoadOrderPath, "/")]))
	if want := []string{"virtio_ring.ko", "virtio.ko", "failover.ko", "net_failover.ko", "virtio_net.ko"}; !slices.Equal(order, want) {
		t.Errorf("load order %v, want %v", order, want)
	}
	for _, ko := range order {
		if _, ok := files["lib/modules/"+ko]; !ok {
			t.Errorf("%s is in the load order but not in the archive", ko)
		}
	}
	// Exactly: no shell, no other module.
	if len(names) != 8+1+len(order)+1 {
		t.Errorf("archive holds %v; want the 8 directories, init, %d modules and the load order", names, len(order))
	}
}
