package vminit

import (
	"time"

	"golang.org/x/sys/unix"
)

// uptime is the time since the kernel booted (CLOCK_BOOTTIME).
func uptime() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_BOOTTIME, &ts)
	return time.Duration(ts.Nano())
}
