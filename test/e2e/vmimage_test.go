//go:build cloudimage || realkubelet

package e2e

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// cloudImageSpec uploads the disk of the cloud image in directory img
// (bin/cloudimage or bin/kubeletimage: hack/tools/cloudimage.sh) into the
// scenario's pool and copies its kernel and initrd where QEMU reads them,
// and returns the providerSpec booting them with memory: the kernel with
// the image's overlay as root.
func (w *vmWorld) cloudImageSpec(t *testing.T, img, memory string) string {
	t.Helper()
	const disk = "debian-cloud.qcow2"
	for _, f := range []struct{ from, to string }{
		{"vmlinuz", filepath.Join(w.dir, "cloud-vmlinuz")},
		{"initrd.img", filepath.Join(w.dir, "cloud-initrd.img")},
		{"disk.qcow2", filepath.Join(w.dir, "pool", disk)},
	} {
		if err := copyFile(filepath.Join(img, f.from), f.to); err != nil {
			t.Fatalf("%v: run `make cloud-image` or `make kubelet-image` (hack/tools/cloudimage.sh builds the images)", err)
		}
	}
	pool, err := w.l.StoragePoolLookupByName(w.pool)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.l.StoragePoolRefresh(pool, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.l.StorageVolLookupByName(pool, disk); err != nil {
		t.Fatalf("the image is not a volume of pool %s: %v", w.pool, err)
	}
	if !slices.Contains(w.images, disk) {
		w.images = append(w.images, disk)
	}
	return fmt.Sprintf(`{"cpus":1,"memory":%q,"domainType":"qemu","kernel":%q,"initramfs":%q,"cmdline":"console=ttyS0 root=/dev/vda rw panic=-1","image":%q,"pool":%q,"shutdownGracePeriod":"30s","network":{"user":%s}}`,
		memory, filepath.Join(w.dir, "cloud-vmlinuz"), filepath.Join(w.dir, "cloud-initrd.img"), disk, w.pool, vmNetwork())
}

// copyFile copies from to to (mode 0644: QEMU reads it as libvirt's user).
func copyFile(from, to string) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
