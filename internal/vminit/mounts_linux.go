package vminit

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// mountBase mounts what the kernel does not: /proc, /sys, /dev (devtmpfs:
// the kernel creates the device nodes, no udev needed), and tmpfs /run and
// /tmp, where the agent keeps its credentials. Then it points stdin,
// stdout and stderr at /dev/console (the serial port with console=ttyS0).
func mountBase() error {
	for _, m := range []struct {
		fstype, target string
		flags          uintptr
		data           string
	}{
		{"proc", "/proc", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		{"sysfs", "/sys", unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC, ""},
		{"devtmpfs", "/dev", unix.MS_NOSUID, "mode=0755"},
		{"tmpfs", "/run", unix.MS_NOSUID | unix.MS_NODEV, "mode=0755"},
		{"tmpfs", "/tmp", unix.MS_NOSUID | unix.MS_NODEV, "mode=1777"},
	} {
		if err := os.MkdirAll(m.target, 0o755); err != nil {
			return err
		}
		if err := unix.Mount(m.fstype, m.target, m.fstype, m.flags, m.data); err != nil && err != unix.EBUSY {
			return fmt.Errorf("mounting %s on %s: %w", m.fstype, m.target, err)
		}
	}
	console, err := os.OpenFile("/dev/console", os.O_RDWR, 0)
	if err != nil {
		return err
	}
	for fd := range 3 {
		if err := unix.Dup2(int(console.Fd()), fd); err != nil {
			return err
		}
	}
	return nil
}

// powerOff syncs and powers the machine off. It does not return.
func powerOff() {
	unix.Sync()
	takeNetworkDown()
	_ = unix.Reboot(unix.LINUX_REBOOT_CMD_POWER_OFF)
	// Only reached if the reboot call failed: pid 1 must not exit (and
	// an empty select would be a deadlock the runtime kills it for).
	for {
		time.Sleep(time.Hour)
	}
}
