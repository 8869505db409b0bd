package relay

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// childHostEnv makes the test binary a relay (TestMain): stdin is the
// guest connection, the variable the host address, as under QEMU.
const childHostEnv = "RELAY_TEST_CHILD_HOST"

func TestMain(m *testing.M) {
	if host := os.Getenv(childHostEnv); host != "" {
		g, err := Stdio()
		if err != nil {
			os.Exit(3)
		}
		if Run(context.Background(), g, host) != nil {
			os.Exit(2)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// socketPair returns two connected stream sockets, as libslirp gives the
// relay one end of a pair and keeps the other.
func socketPair(t *testing.T) (*os.File, *os.File) {
	t.Helper()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := os.NewFile(uintptr(fds[0]), "qemu"), os.NewFile(uintptr(fds[1]), "relay")
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// fileConn is f as a connection; f itself is closed (the connection has
// a descriptor of its own), so closing the connection closes the socket.
func fileConn(t *testing.T, f *os.File) net.Conn {
	t.Helper()
	c, err := net.FileConn(f)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	t.Cleanup(func() { c.Close() })
	return c
}

// listen returns a TCP listener on the loopback whose first connection
// is sent down the channel.
func listen(t *testing.T) (net.Listener, chan net.Conn) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	conns := make(chan net.Conn, 4)
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			conns <- c
		}
	}()
	return lis, conns
}

// TestRequestAnswerWithHalfClose: the guest sends a request and shuts its
// sending side; the host reads it to its end, answers and closes; the
// guest reads the whole answer and its end; the relay then returns.
func TestRequestAnswerWithHalfClose(t *testing.T) {
	lis, conns := listen(t)
	qemuEnd, relayEnd := socketPair(t)
	guest := fileConn(t, qemuEnd)
	ran := make(chan error, 1)
	go func() { ran <- Run(context.Background(), fileConn(t, relayEnd), lis.Addr().String()) }()

	request := bytes.Repeat([]byte("request "), 100_000)
	go func() {
		_, _ = guest.Write(request)
		_ = guest.(*net.UnixConn).CloseWrite()
	}()
	host := <-conns
	got, err := io.ReadAll(host)
	if err != nil || !bytes.Equal(got, request) {
		t.Fatalf("the host read %d bytes (%v), want the %d of the request to its end", len(got), err, len(request))
	}
	answer := bytes.Repeat([]byte("answer "), 100_000)
	if _, err := host.Write(answer); err != nil {
		t.Fatal(err)
	}
	host.Close()
	got, err = io.ReadAll(guest)
	if err != nil || !bytes.Equal(got, answer) {
		t.Fatalf("the guest read %d bytes (%v), want the %d of the answer to its end", len(got), err, len(answer))
	}
	if err := <-ran; err != nil {
		t.Fatalf("Run: %v", err)
	}
}

// TestEachConnectionItsOwn: two relays at once carry two streams that do
// not mix, as two connections of the guest each get a relay.
func TestEachConnectionItsOwn(t *testing.T) {
	lis, conns := listen(t)
	var guests, hosts []net.Conn
	for range 2 { // both open at once, each relay's host connection known
		qemuEnd, relayEnd := socketPair(t)
		guests = append(guests, fileConn(t, qemuEnd))
		go func() { _ = Run(context.Background(), fileConn(t, relayEnd), lis.Addr().String()) }()
		hosts = append(hosts, <-conns)
	}
	for i, g := range guests {
		if _, err := g.Write([]byte{byte('a' + i)}); err != nil {
			t.Fatal(err)
		}
	}
	for i, g := range guests {
		h := hosts[i]
		b := make([]byte, 1)
		if _, err := io.ReadFull(h, b); err != nil || b[0] != byte('a'+i) {
			t.Fatalf("connection %d: the host read %q (%v)", i, b, err)
		}
		if _, err := h.Write([]byte{byte('A' + i)}); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(g, b); err != nil || b[0] != byte('A'+i) {
			t.Fatalf("connection %d: the guest read %q (%v)", i, b, err)
		}
		h.Close()
	}
}

// TestUnreachableHostEndsTheGuestConnection: nothing listens at the host
// address, so the guest's connection ends at once.
func TestUnreachableHostEndsTheGuestConnection(t *testing.T) {
	lis, _ := listen(t)
	addr := lis.Addr().String()
	lis.Close()
	qemuEnd, relayEnd := socketPair(t)
	guest := fileConn(t, qemuEnd)
	if err := Run(context.Background(), fileConn(t, relayEnd), addr); err == nil {
		t.Error("Run connected to a closed port")
	}
	if n, err := guest.Read(make([]byte, 1)); err != io.EOF {
		t.Errorf("the guest read %d bytes, %v; want its connection ended", n, err)
	}
}

// TestProcessExitsWhenQEMUGoes runs the relay as QEMU does, a process
// whose stdin, stdout and stderr are its end of a socket pair: bytes go
// both ways (and nothing else reaches the guest), and when QEMU's end
// closes (QEMU exited) while the host connection is open and idle, the
// process exits and the host sees its connection end.
func TestProcessExitsWhenQEMUGoes(t *testing.T) {
	lis, conns := listen(t)
	qemuEnd, relayEnd := socketPair(t)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childHostEnv+"="+lis.Addr().String())
	cmd.Stdin, cmd.Stdout, cmd.Stderr = relayEnd, relayEnd, relayEnd
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	relayEnd.Close()
	guest := fileConn(t, qemuEnd)
	if _, err := guest.Write([]byte("ping")); err != nil {
		t.Fatal(err)
	}
	host := <-conns
	b := make([]byte, 4)
	if _, err := io.ReadFull(host, b); err != nil || string(b) != "ping" {
		t.Fatalf("the host read %q (%v)", b, err)
	}
	if _, err := host.Write([]byte("pong")); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(guest, b); err != nil || string(b) != "pong" {
		t.Fatalf("the guest read %q (%v)", b, err)
	}
	guest.Close() // QEMU is gone
	if n, err := host.Read(b); err != io.EOF {
		t.Errorf("the host read %d bytes, %v; want the end of the guest's sending", n, err)
	}
	host.Close() // as an HTTP server does at its client's end
	if err := cmd.Wait(); err != nil {
		t.Errorf("the relay process: %v; want it to exit, successfully", err)
	}
}

// TestHostThatNeverEnds: once the guest has ended, a host connection that
// stays open and silent keeps the relay no longer than the drain timeout.
func TestHostThatNeverEnds(t *testing.T) {
	lis, conns := listen(t)
	qemuEnd, relayEnd := socketPair(t)
	guest := fileConn(t, qemuEnd)
	ran := make(chan error, 1)
	go func() { ran <- run(context.Background(), fileConn(t, relayEnd), lis.Addr().String(), time.Millisecond) }()
	host := <-conns
	defer host.Close()
	guest.Close()
	if err := <-ran; err != nil {
		t.Errorf("Run: %v", err)
	}
}
