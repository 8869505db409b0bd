package vminit

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// inputs is where the evdev devices are: their nodes (devtmpfs) and their
// sysfs entries, whose device/name says what each one is.
type inputs struct {
	dev, sys string
	// rescan is how often new devices are looked for until the power
	// button's is watched.
	rescan time.Duration
}

// systemInputs are the machine's.
var systemInputs = inputs{dev: "/dev/input", sys: "/sys/class/input", rescan: 250 * time.Millisecond}

// powerButtonName is the name of the ACPI power button's input device
// (the fixed-feature LNXPWRBN and a PNP0C0C device alike).
const powerButtonName = "Power Button"

// noButtonAfter is how long the watch looks for the power button before
// saying on the console that it has not found it (it goes on looking).
const noButtonAfter = 30 * time.Second

// powerButton reports a press of the ACPI power button (what `virsh
// shutdown` and the libvirt driver's deletion send), read from the evdev
// devices of in, once loaded says the button and evdev modules are
// loaded. It watches every event device (a keyboard's power key counts
// too) and looks for new ones every in.rescan until it watches the one
// named "Power Button": the devices appear as their drivers probe, which
// need not be over when the modules are loaded (the keyboard's is probed
// asynchronously), so a single look could see the keyboard's and not yet
// the button's (docs/providers/node-agent.md). It
// logs each device it watches by name, so a console shows whether the
// button was watched. Without one the VM is destroyed at the end of its
// deletion's grace period.
func powerButton(ctx context.Context, loaded <-chan struct{}, in inputs) <-chan struct{} {
	pressed := make(chan struct{}, 1)
	go func() {
		defer func() { logPanic(recover()) }()
		select {
		case <-loaded:
		case <-ctx.Done():
			return
		}
		begin := time.Now()
		watched := map[string]bool{}
		warned := false
		tick := time.NewTicker(in.rescan)
		defer tick.Stop()
		for {
			if in.watchNew(watched, pressed) {
				return
			}
			if !warned && time.Since(begin) > noButtonAfter {
				warned = true
				Logf("no %q input device after %s: the ACPI power button is not watched yet", powerButtonName, noButtonAfter)
			}
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return pressed
}

// watchNew starts watching the event devices of in not in watched yet,
// adding them, and reports whether a power button is among the watched.
// A device that cannot be opened is tried again at the next scan.
func (in inputs) watchNew(watched map[string]bool, pressed chan<- struct{}) (button bool) {
	devs, _ := filepath.Glob(filepath.Join(in.dev, "event*"))
	for _, dev := range devs {
		base := filepath.Base(dev)
		name := in.name(base)
		if !watched[base] {
			f, err := os.Open(dev)
			if err != nil {
				Logf("input device %s (%s): %v", base, name, err)
				continue
			}
			watched[base] = true
			Logf("watching input device %s (%s) for the ACPI power button", base, name)
			go watchKeys(f, base, pressed)
		}
		if name == powerButtonName {
			button = true
		}
	}
	return button
}

// name is the device name the kernel gives the event device base, or
// "unnamed".
func (in inputs) name(base string) string {
	b, err := os.ReadFile(filepath.Join(in.sys, base, "device", "name"))
	if err != nil {
		return "unnamed"
	}
	return strings.TrimSpace(string(b))
}

// struct input_event on 64-bit Linux: a timeval (16 bytes), then type
// (u16), code (u16) and value (s32).
const (
	inputEventSize = 24
	evKey          = 1
	keyPower       = 116
)

// watchKeys reads the events of the device f (named base) and reports
// each press of KEY_POWER, until it cannot read.
func watchKeys(f *os.File, base string, pressed chan<- struct{}) {
	defer func() { logPanic(recover()) }()
	defer func() { _ = f.Close() }()
	buf := make([]byte, inputEventSize)
	for {
		if _, err := f.Read(buf); err != nil {
			Logf("input device %s: %v: no longer watched", base, err)
			return
		}
		if isPowerPress(buf) {
			Logf("KEY_POWER pressed on input device %s", base)
			select {
			case pressed <- struct{}{}:
			default:
			}
		}
	}
}

// isPowerPress reports whether the input event ev is a press of KEY_POWER
// (not its release or autorepeat, nor another key).
func isPowerPress(ev []byte) bool {
	typ, code := binary.NativeEndian.Uint16(ev[16:]), binary.NativeEndian.Uint16(ev[18:])
	value := int32(binary.NativeEndian.Uint32(ev[20:]))
	return typ == evKey && code == keyPower && value == 1
}
