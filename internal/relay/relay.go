// Package relay joins one connection a VM opened through QEMU's user-mode
// network to a TCP address on the host: QEMU's per-connection guest forward
// (`guestfwd=tcp:GUEST-cmd:PROGRAM`) spawns `millwright-libvirt relay HOST`
// for each connection the guest opens to GUEST, with the connection as the
// program's stdin, stdout and stderr (docs/providers/libvirt.md, "The
// network"). So nothing but relayed bytes may ever be written there: the
// relay logs nothing, and an error only ends it.
package relay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// DrainTimeout is how long, once one side has ended, the other may still
// send before the relay closes both: a half-closed connection is carried
// on (a guest may shut down its sending side and still read the answer),
// but a host connection that stays open and silent cannot keep the relay
// alive long after its VM is gone. (QEMU's end of the guest connection
// is a TCP socket: its closing reads as a half-close.)
const DrainTimeout = 10 * time.Second

// DialTimeout bounds connecting to the host address.
const DialTimeout = 10 * time.Second

// halfCloser is a connection whose sending side can be shut down alone.
type halfCloser interface {
	CloseWrite() error
}

// Stdio is the guest connection QEMU handed the relay: its stdin, which
// libslirp makes a socket. A socket gets half-closed as a socket; with
// stdin and stdout as two other files (pipes), closing stdout is the
// half-close.
func Stdio() (io.ReadWriteCloser, error) {
	if c, err := net.FileConn(os.Stdin); err == nil {
		// FileConn duplicated the descriptor: the original ones (0, 1, 2)
		// still hold the socket open, so only a shutdown half-closes it.
		return c, nil
	}
	return stdioPipes{}, nil
}

// stdioPipes is stdin and stdout when they are not a socket.
type stdioPipes struct{}

func (stdioPipes) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdioPipes) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdioPipes) CloseWrite() error           { return os.Stdout.Close() }
func (stdioPipes) Close() error                { return errors.Join(os.Stdin.Close(), os.Stdout.Close()) }

// Run connects to host (host:port) and copies guest to it and back until
// both directions have ended, or one has and the other has not within
// DrainTimeout, then closes both; or until ctx ends (the relay was told
// to stop), which closes both at once. A failed connection to host closes
// guest at once: the guest sees its connection end, as if refused.
func Run(ctx context.Context, guest io.ReadWriteCloser, host string) error {
	return run(ctx, guest, host, DrainTimeout)
}

func run(ctx context.Context, guest io.ReadWriteCloser, host string, drain time.Duration) error {
	defer guest.Close()
	var d net.Dialer
	dctx, cancel := context.WithTimeout(ctx, DialTimeout)
	defer cancel()
	h, err := d.DialContext(dctx, "tcp", host)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", host, err)
	}
	defer h.Close()
	stop := context.AfterFunc(ctx, func() { _, _ = guest.Close(), h.Close() })
	defer stop()
	return join(guest, h, drain)
}

// join copies a to b and b to a; when one direction ends (end of file or
// an error), the other side's sending is shut down, and the other
// direction has drain to end (its not ending is no error: the
// caller closes both). It does not close a or b.
func join(a, b io.ReadWriter, drain time.Duration) error {
	done := make(chan error, 2)
	pipe := func(dst, src io.ReadWriter) {
		_, err := io.Copy(dst, src)
		if hc, ok := dst.(halfCloser); ok {
			err = errors.Join(err, ignoreClosed(hc.CloseWrite()))
		}
		done <- err
	}
	go pipe(b, a)
	go pipe(a, b)
	first := <-done
	select {
	case second := <-done:
		return errors.Join(first, second)
	case <-time.After(drain):
		return first
	}
}

// ignoreClosed drops the error of shutting down a connection the peer
// already closed: there is nobody left to tell.
func ignoreClosed(err error) error {
	if errors.Is(err, net.ErrClosed) || errors.Is(err, os.ErrClosed) {
		return nil
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "shutdown" {
		return nil
	}
	return err
}
