// Package vminit is millwright-node-agent as a VM's init (pid 1 in the
// initramfs `make tools` builds into bin/vm/initramfs.img): it mounts the
// kernel's filesystems, loads the initramfs's kernel modules in order,
// finds and mounts the cloud-init NoCloud seed (ISO9660 labelled cidata),
// brings up eth0 (DHCP, else QEMU user networking's static address), and
// then runs the agent as a child process, so that nothing the agent does
// (a panic in any goroutine included) can make pid 1 exit, which would
// panic the kernel. When the child ends, or on SIGTERM, SIGINT, SIGPWR or
// an ACPI power-button press, pid 1 stops the child and powers off.
//
// docs/providers/node-agent.md describes the seed and the boot.
package vminit
