// Package libvirt is the libvirt driver: it runs each Machine as a libvirt
// domain (a QEMU VM), talking to libvirtd over its RPC protocol with
// go-libvirt. The domain is named after the Machine's UID and carries
// Millwright's metadata, so creates are idempotent across driver restarts
// and orphan collection only ever sees Millwright's domains. The VM gets
// its user data as a cloud-init NoCloud seed disk. docs/providers/libvirt.md
// describes the providerSpec, the providerID and the seed for users and for
// whoever writes the VM's init.
package libvirt
