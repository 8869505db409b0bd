package libvirt

import (
	"bytes"
	"path/filepath"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// defaultPoolDir is where the driver creates DefaultPool.
const defaultPoolDir = "/var/lib/libvirt/millwright"

// pool returns the storage pool name, active. DefaultPool is defined (a
// directory pool) and started when missing; any other pool must exist.
func (c *conn) pool(name string) (golibvirt.StoragePool, error) {
	p, err := c.l.StoragePoolLookupByName(name)
	if isCode(err, golibvirt.ErrNoStoragePool) && name == DefaultPool {
		p, err = c.definePool(name, filepath.Join(defaultPoolDir))
	}
	if isCode(err, golibvirt.ErrNoStoragePool) {
		return p, invalid("providerSpec.pool", "libvirt at %s has no storage pool %q", c.uri, name)
	}
	if err != nil {
		return p, c.errorf(err, "looking up storage pool %s", name)
	}
	active, err := c.l.StoragePoolIsActive(p)
	if err != nil {
		return p, c.errorf(err, "storage pool %s", name)
	}
	if active == 0 {
		if err := c.l.StoragePoolCreate(p, 0); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
			return p, c.errorf(err, "starting storage pool %s", name)
		}
	}
	return p, nil
}

func (c *conn) definePool(name, dir string) (golibvirt.StoragePool, error) {
	x, err := (&libvirtxml.StoragePool{
		Type:   "dir",
		Name:   name,
		Target: &libvirtxml.StoragePoolTarget{Path: dir},
	}).Marshal()
	if err != nil {
		return golibvirt.StoragePool{}, err
	}
	p, err := c.l.StoragePoolDefineXML(x, 0)
	if isCode(err, golibvirt.ErrStoragePoolBuilt) || isCode(err, golibvirt.ErrOperationFailed) {
		// Another driver instance defined it meanwhile.
		return c.l.StoragePoolLookupByName(name)
	}
	if err != nil {
		return p, err
	}
	if err := c.l.StoragePoolBuild(p, golibvirt.StoragePoolBuildNew); err != nil {
		return p, err
	}
	// Started with the daemon, so the volumes of defined domains are there
	// after a host reboot.
	if err := c.l.StoragePoolSetAutostart(p, 1); err != nil {
		return p, err
	}
	return p, nil
}

// deleteVolume deletes a volume; one that does not exist is no error.
func (c *conn) deleteVolume(pool golibvirt.StoragePool, name string) error {
	v, err := c.l.StorageVolLookupByName(pool, name)
	if isCode(err, golibvirt.ErrNoStorageVol) {
		return nil
	}
	if err != nil {
		return c.errorf(err, "looking up volume %s/%s", pool.Name, name)
	}
	if err := c.l.StorageVolDelete(v, golibvirt.StorageVolDeleteNormal); err != nil && !isCode(err, golibvirt.ErrNoStorageVol) {
		return c.errorf(err, "deleting volume %s/%s", pool.Name, name)
	}
	return nil
}

// createSeed writes the seed image as a raw volume, replacing a volume of
// that name left by an interrupted create.
func (c *conn) createSeed(pool golibvirt.StoragePool, name string, iso []byte) error {
	if err := c.deleteVolume(pool, name); err != nil {
		return err
	}
	x, err := (&libvirtxml.StorageVolume{
		Name:     name,
		Capacity: &libvirtxml.StorageVolumeSize{Value: uint64(len(iso)), Unit: "bytes"},
		Target:   &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "raw"}},
	}).Marshal()
	if err != nil {
		return err
	}
	v, err := c.l.StorageVolCreateXML(pool, x, 0)
	if err != nil {
		return c.errorf(err, "creating the seed volume %s/%s", pool.Name, name)
	}
	if err := c.l.StorageVolUpload(v, bytes.NewReader(iso), 0, uint64(len(iso)), 0); err != nil {
		return c.errorf(err, "uploading the seed volume %s/%s", pool.Name, name)
	}
	return nil
}

// createState makes the state volume: size bytes of zeroes (which the node
// agent reads as "no state"), replacing a volume of that name left by an
// interrupted create, whose state was never a running domain's.
func (c *conn) createState(pool golibvirt.StoragePool, name string, size uint64) error {
	if err := c.deleteVolume(pool, name); err != nil {
		return err
	}
	x, err := (&libvirtxml.StorageVolume{
		Name:     name,
		Capacity: &libvirtxml.StorageVolumeSize{Value: size, Unit: "bytes"},
		Target:   &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "raw"}},
	}).Marshal()
	if err != nil {
		return err
	}
	if _, err := c.l.StorageVolCreateXML(pool, x, 0); err != nil {
		return c.errorf(err, "creating the state volume %s/%s", pool.Name, name)
	}
	return nil
}

// image is a base volume VMs boot from.
type image struct {
	path, format string
	capacity     uint64 // bytes
}

// image looks up the volume name of pool as a base image.
func (c *conn) image(pool golibvirt.StoragePool, name string) (*image, error) {
	base, err := c.l.StorageVolLookupByName(pool, name)
	if isCode(err, golibvirt.ErrNoStorageVol) {
		return nil, invalid("providerSpec.image", "storage pool %s has no volume %q", pool.Name, name)
	}
	if err != nil {
		return nil, c.errorf(err, "looking up the image %s/%s", pool.Name, name)
	}
	x, err := c.l.StorageVolGetXMLDesc(base, 0)
	if err != nil {
		return nil, c.errorf(err, "reading the image %s/%s", pool.Name, name)
	}
	var v libvirtxml.StorageVolume
	if err := v.Unmarshal(x); err != nil || v.Target == nil || v.Capacity == nil {
		return nil, driver.Errorf(driver.Internal, "image %s/%s: unexpected volume description (%v)", pool.Name, name, err)
	}
	img := &image{path: v.Target.Path, format: "raw", capacity: v.Capacity.Value}
	if v.Target.Format != nil && v.Target.Format.Type != "" {
		img.format = v.Target.Format.Type
	}
	// libvirt reports capacities in bytes; anything else is a surprise.
	if u := v.Capacity.Unit; u != "" && u != "bytes" && u != "B" {
		return nil, driver.Errorf(driver.Internal, "image %s/%s: capacity in %s", pool.Name, name, u)
	}
	return img, nil
}

// createOverlay makes a qcow2 volume backed by the image, so the VM writes
// a disk of its own and never the image. size 0 is the image's size.
func (c *conn) createOverlay(pool golibvirt.StoragePool, name string, img *image, size uint64) error {
	if size == 0 {
		size = img.capacity
	}
	if size < img.capacity {
		return invalid("providerSpec.diskSize", "%d bytes is smaller than the image (%d bytes)", size, img.capacity)
	}
	if err := c.deleteVolume(pool, name); err != nil {
		return err
	}
	x, err := (&libvirtxml.StorageVolume{
		Name:     name,
		Capacity: &libvirtxml.StorageVolumeSize{Value: size, Unit: "bytes"},
		Target:   &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "qcow2"}},
		BackingStore: &libvirtxml.StorageVolumeBackingStore{
			Path:   img.path,
			Format: &libvirtxml.StorageVolumeTargetFormat{Type: img.format},
		},
	}).Marshal()
	if err != nil {
		return err
	}
	if _, err := c.l.StorageVolCreateXML(pool, x, 0); err != nil {
		return c.errorf(err, "creating the disk %s/%s on %s", pool.Name, name, img.path)
	}
	return nil
}
