package libvirt

import (
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"
)

// A daemon that accepts a connection and never answers holds up the calls
// for its URI only: another daemon's are served meanwhile.
func TestStuckDaemonHoldsUpOnlyItsURI(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "stuck.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = ln.Close() }()

	var cs conns
	defer cs.closeAll()
	stuckCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _, _ = cs.get(stuckCtx, "qemu:///system?socket="+sock) }()
	accepted, err := ln.Accept() // the stuck dial is under way
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = accepted.Close() }()

	done := make(chan error, 1)
	go func() {
		_, err := cs.get(context.Background(), "qemu:///system")
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("connecting to the running libvirtd: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the connection to the running libvirtd waited for the stuck daemon's dial")
	}
}
