package libvirtd

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"
)

const (
	// ensureTimeout bounds starting the daemons for a test binary.
	ensureTimeout = 2 * time.Minute
	// stopTimeout bounds how long a test binary waits, at its end, for
	// other test binaries to be done with the daemons it started.
	stopTimeout = 30 * time.Minute
)

// Main is the TestMain body of a package whose tests need the libvirt
// daemons: it makes sure they run (Ensure, logging into a temporary
// directory readable by QEMU, which setup also gets), runs setup, the
// tests, setup's cleanup, and Stop. The tests fail, never skip, when the
// daemons cannot be started. setup may be nil.
func Main(m *testing.M, setup func(dir string) (cleanup func(), err error)) int {
	dir, err := os.MkdirTemp("", "mw-libvirt-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	// QEMU runs as libvirt's unprivileged user: it must reach the files.
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), ensureTimeout)
	defer cancel()
	daemons, err := Ensure(ctx, dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: these tests need libvirtd and virtlogd (qemu:///system, as root): %v\n", err)
		return 1
	}
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
		defer cancel()
		if err := daemons.Stop(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "stopping the libvirt daemons:", err)
		}
	}()
	if setup != nil {
		cleanup, err := setup(dir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "FAIL: setting up the tests:", err)
			return 1
		}
		defer cleanup()
	}
	return m.Run()
}
