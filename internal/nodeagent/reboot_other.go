//go:build !linux

package nodeagent

import "errors"

// RebootMachine is supported on Linux only.
func RebootMachine() error { return errors.New("rebooting is supported on Linux only") }
