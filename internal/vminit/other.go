//go:build !linux

package vminit

import (
	"os"
	"time"
)

var start = time.Now()

// uptime is the time since the process started: only Linux says when the
// machine booted.
func uptime() time.Duration { return time.Since(start) }

// Main is pid 1 of a Linux VM; elsewhere it only says so.
func Main(func(seedDir string) []string) {
	Logf("running as pid 1 is supported on Linux only")
	os.Exit(1)
}
