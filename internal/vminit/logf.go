package vminit

import (
	"fmt"
	"os"
)

// Logf prints to stderr (the console, under pid 1) with the seconds since
// the kernel booted, so a console log shows how long each step took.
func Logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "[%6.2f] millwright-node-agent: %s\n", uptime().Seconds(), fmt.Sprintf(format, args...))
}
