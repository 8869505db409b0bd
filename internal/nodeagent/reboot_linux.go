package nodeagent

import "golang.org/x/sys/unix"

// RebootMachine syncs the filesystems and restarts the machine at once
// (reboot(2), LINUX_REBOOT_CMD_RESTART), as an in-place update needs: the
// kernel resets the VM, which its hypervisor restarts (libvirt's
// on_reboot restart). It returns only if the kernel refused.
func RebootMachine() error {
	unix.Sync()
	return unix.Reboot(unix.LINUX_REBOOT_CMD_RESTART)
}
