package driver

import (
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
)

// endpoint is where a driver plugin listens: a unix socket or a TCP address.
type endpoint struct {
	// network is "unix" or "tcp", as net.Listen takes it.
	network string
	// address is the socket's path or host:port.
	address string
}

// parseEndpoint accepts unix:///absolute/path.sock, tcp://host:port and
// host:port. Anything else is refused with a message that lists these forms,
// so a typo in a flag is caught at start-up rather than by a dial that
// fails on every call.
func parseEndpoint(s string) (endpoint, error) {
	const forms = "want unix:///absolute/path.sock, tcp://host:port or host:port"
	switch {
	case s == "":
		return endpoint{}, fmt.Errorf("empty driver endpoint: %s", forms)
	case strings.HasPrefix(s, "unix://"):
		path := strings.TrimPrefix(s, "unix://")
		if !filepath.IsAbs(path) {
			return endpoint{}, fmt.Errorf("driver endpoint %q: the socket path must be absolute (unix:///path.sock): %s", s, forms)
		}
		return endpoint{network: "unix", address: filepath.Clean(path)}, nil
	case strings.HasPrefix(s, "tcp://"):
		return tcpEndpoint(s, strings.TrimPrefix(s, "tcp://"), forms)
	case strings.Contains(s, "://"):
		return endpoint{}, fmt.Errorf("driver endpoint %q: unsupported scheme: %s", s, forms)
	}
	return tcpEndpoint(s, s, forms)
}

func tcpEndpoint(s, hostPort, forms string) (endpoint, error) {
	_, port, err := net.SplitHostPort(hostPort)
	if err != nil {
		return endpoint{}, fmt.Errorf("driver endpoint %q: %v: %s", s, err, forms)
	}
	// Port 0 is allowed: a server listens on a free port (tests do); Dial
	// refuses it.
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return endpoint{}, fmt.Errorf("driver endpoint %q: port %q is not a number from 0 to 65535: %s", s, port, forms)
	}
	return endpoint{network: "tcp", address: hostPort}, nil
}

// String returns the endpoint in the form the gRPC client dials.
func (e endpoint) String() string {
	if e.network == "unix" {
		return "unix://" + e.address
	}
	return "dns:///" + e.address
}
