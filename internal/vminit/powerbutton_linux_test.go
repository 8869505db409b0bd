package vminit

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// inputEvent is a struct input_event of the given type, code and value.
func inputEvent(typ, code uint16, value int32) []byte {
	ev := make([]byte, inputEventSize)
	binary.NativeEndian.PutUint16(ev[16:], typ)
	binary.NativeEndian.PutUint16(ev[18:], code)
	binary.NativeEndian.PutUint32(ev[20:], uint32(value))
	return ev
}

func TestIsPowerPress(t *testing.T) {
	const keyA = 30
	for _, c := range []struct {
		ev   []byte
		want bool
	}{
		{inputEvent(evKey, keyPower, 1), true},
		{inputEvent(evKey, keyPower, 0), false}, // release
		{inputEvent(evKey, keyPower, 2), false}, // autorepeat
		{inputEvent(evKey, keyA, 1), false},
		{inputEvent(0, keyPower, 1), false}, // EV_SYN
	} {
		if got := isPowerPress(c.ev); got != c.want {
			t.Errorf("isPowerPress(%v) = %v, want %v", c.ev[16:], got, c.want)
		}
	}
}

// TestPowerButtonAppearingLate is the boot where the keyboard's event
// device is there before the power button's: the watch must go on
// looking, find the button's and report its press.
func TestPowerButtonAppearingLate(t *testing.T) {
	dir := t.TempDir()
	in := inputs{dev: filepath.Join(dir, "dev"), sys: filepath.Join(dir, "sys"), rescan: 10 * time.Millisecond}
	if err := os.Mkdir(in.dev, 0o755); err != nil {
		t.Fatal(err)
	}
	// addDevice makes event device base named name: its sysfs name, then
	// its node, a FIFO the test writes events into. It returns the FIFO's
	// path.
	addDevice := func(base, name string) string {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(in.sys, base, "device"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(in.sys, base, "device", "name"), []byte(name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, base)
		if err := unix.Mkfifo(tmp, 0o600); err != nil {
			t.Fatal(err)
		}
		node := filepath.Join(in.dev, base)
		if err := os.Rename(tmp, node); err != nil {
			t.Fatal(err)
		}
		return node
	}
	keyboard := addDevice("event0", "AT Translated Set 2 keyboard")

	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	loaded := make(chan struct{})
	close(loaded)
	pressed := powerButton(ctx, loaded, in)
	// Opening a FIFO for writing waits for its reader: once this returns,
	// the watch has looked at the devices and seen the keyboard's only.
	kw, err := os.OpenFile(keyboard, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = kw.Close() }()

	// Read-write: the open does not wait for the watch to find it.
	button, err := os.OpenFile(addDevice("event1", powerButtonName), os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = button.Close() }()
	if _, err := button.Write(inputEvent(evKey, keyPower, 1)); err != nil {
		t.Fatal(err)
	}
	// A bound for a hung watch, not a speed check.
	select {
	case <-pressed:
	case <-time.After(30 * time.Second):
		t.Fatal("the press on the power button's device, which appeared after the keyboard's, was not reported")
	}
}
