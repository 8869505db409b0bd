package vminit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime/debug"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// How long the boot waits for devices, and for a child to stop.
const (
	deviceTimeout = 30 * time.Second
	dhcpTimeout   = 15 * time.Second
	stopTimeout   = 20 * time.Second
)

// Main is pid 1: it prepares the machine, runs the agent as a child
// process with the arguments childArgs returns for the mounted seed
// directory, and powers off when the child ends or the machine is asked
// to stop. It never returns: any failure is logged and the machine
// powered off.
func Main(childArgs func(seedDir string) []string) {
	defer func() {
		logPanic(recover())
		Logf("powering off")
		powerOff()
	}()
	if err := run(childArgs); err != nil {
		Logf("%v", err)
	}
}

// logPanic logs a recovered panic. Every goroutine of pid 1 recovers: a
// panic that reached the runtime would end pid 1 and panic the kernel.
func logPanic(r any) {
	if r != nil {
		Logf("panic: %v\n%s", r, debug.Stack())
	}
}

func run(childArgs func(seedDir string) []string) error {
	if err := mountBase(); err != nil {
		return fmt.Errorf("mounting the base filesystems: %w", err)
	}
	Logf("pid 1 up")
	// Caught from the start, so a stop during the boot powers off cleanly
	// rather than killing pid 1.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT, syscall.SIGPWR)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	modulesLoaded := make(chan struct{})
	go func() {
		defer func() { logPanic(recover()) }()
		select {
		case s := <-stop:
			Logf("%v: stopping", s)
		case <-powerButton(ctx, modulesLoaded, systemInputs):
			Logf("ACPI power button: stopping")
		case <-ctx.Done():
			return
		}
		cancel()
	}()

	if err := loadModules(Logf); err != nil {
		return err
	}
	close(modulesLoaded)
	dev, err := mountSeed(ctx, deviceTimeout)
	if err != nil {
		return err
	}
	Logf("seed %s mounted on %s", dev, SeedDir)
	waitForEntropy()
	if err := setUpNetwork(ctx, deviceTimeout, dhcpTimeout, Logf); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	cmd := exec.Command(self, childArgs(SeedDir)...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting the agent: %w", err)
	}
	exited := make(chan error, 1)
	go func() {
		defer func() { logPanic(recover()) }()
		exited <- cmd.Wait()
	}()
	select {
	case err := <-exited:
		return fmt.Errorf("the agent exited: %v", err)
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		Logf("the agent stopped (%v)", err)
	case <-time.After(stopTimeout):
		_ = cmd.Process.Kill()
		Logf("the agent did not stop within %s: killed", stopTimeout)
	}
	return nil
}

// waitForEntropy blocks until the kernel's random number generator is
// initialised. The DHCP client's transaction IDs come from a non-blocking
// getrandom that it retries in a loop, which never lets the kernel run the
// jitter-entropy collection that a blocking call starts: on a VM without
// virtio-rng or RDRAND (QEMU TCG) it would spin forever.
func waitForEntropy() {
	begin := time.Now()
	if _, err := unix.Getrandom(make([]byte, 1), 0); err != nil {
		Logf("getrandom: %v", err)
		return
	}
	Logf("random number generator ready after %s", time.Since(begin).Round(time.Millisecond))
}
