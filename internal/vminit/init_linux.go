package vminit

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
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
		case <-powerButton(ctx, modulesLoaded):
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

// powerButton reports a press of the ACPI power button (what `virsh
// shutdown` and the libvirt driver's deletion send), read from the evdev
// devices that the button and evdev modules provide, once loaded says
// they are. It never fires if there are none, which it logs: the VM is
// then destroyed at the end of its deletion's grace period. Looking while
// the modules loaded (as it once did, for 5 s from pid 1's start) could
// miss the devices on a loaded host, or see the keyboard's before evdev
// had made the power button's and watch only that one: in TestVMLifecycle
// 1 of 6 deleted VMs then ignored the ACPI shutdown.
func powerButton(ctx context.Context, loaded <-chan struct{}) <-chan struct{} {
	pressed := make(chan struct{}, 1)
	go func() {
		defer func() { logPanic(recover()) }()
		select {
		case <-loaded:
		case <-ctx.Done():
			return
		}
		var devs []string
		// The input devices appear as the modules probe, a moment after
		// they are loaded at most.
		for range 50 {
			if devs, _ = filepath.Glob("/dev/input/event*"); len(devs) > 0 || ctx.Err() != nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if len(devs) == 0 {
			Logf("no input device: the ACPI power button is not watched")
			return
		}
		Logf("watching %d input devices for the ACPI power button", len(devs))
		for _, d := range devs {
			go watchKeys(d, pressed)
		}
	}()
	return pressed
}

// struct input_event on 64-bit Linux: a timeval (16 bytes), then type
// (u16), code (u16) and value (s32).
const (
	inputEventSize = 24
	evKey          = 1
	keyPower       = 116
)

func watchKeys(dev string, pressed chan<- struct{}) {
	defer func() { logPanic(recover()) }()
	f, err := os.Open(dev)
	if err != nil {
		return
	}
	defer func() { _ = f.Close() }()
	buf := make([]byte, inputEventSize)
	for {
		if _, err := f.Read(buf); err != nil {
			return
		}
		typ, code := binary.NativeEndian.Uint16(buf[16:]), binary.NativeEndian.Uint16(buf[18:])
		value := int32(binary.NativeEndian.Uint32(buf[20:]))
		if typ == evKey && code == keyPower && value == 1 {
			select {
			case pressed <- struct{}{}:
			default:
			}
		}
	}
}
