// Package cli holds what Millwright's programs share on their command
// lines: loading a kubeconfig, checking a driver endpoint, and telling a
// usage error (exit status 2) from a failure at run time (exit status 1).
package cli

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// UsageError is a bad command line: a flag that does not parse or a value
// that is refused. Programs exit with status 2 for it, so scripts can tell
// "you called me wrong" from "I failed".
type UsageError struct{ Err error }

// Error implements error.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the underlying error.
func (e *UsageError) Unwrap() error { return e.Err }

// ExitCode is the exit status for err: 0 for nil, 2 for a UsageError, else 1.
func ExitCode(err error) int {
	var usage *UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &usage):
		return 2
	}
	return 1
}

// RestConfig loads the kubeconfig at path, or, when path is empty, the
// usual places (the KUBECONFIG variable, in-cluster, ~/.kube/config). qps
// and burst replace client-go's defaults (5 and 10), far too low for a
// controller of thousands of objects; userAgent names the program in the
// API server's audit log.
func RestConfig(path string, qps float32, burst int, userAgent string) (*rest.Config, error) {
	var cfg *rest.Config
	var err error
	if path == "" {
		cfg, err = config.GetConfig()
	} else {
		cfg, err = clientcmd.BuildConfigFromFlags("", path)
	}
	if err != nil {
		if path == "" {
			return nil, fmt.Errorf("no kubeconfig: pass --kubeconfig, set KUBECONFIG or run in a cluster: %w", err)
		}
		return nil, fmt.Errorf("loading kubeconfig %s: %w", path, err)
	}
	cfg.QPS, cfg.Burst = qps, burst
	rest.AddUserAgent(cfg, userAgent)
	return cfg, nil
}

// CheckEndpoint checks the form of a driver endpoint, unix:///absolute/path
// or tcp://host:port, before anything starts; pkg/driver parses it again
// when it dials or listens. A bare host:port is refused here even though
// pkg/driver takes it: on a command line the scheme makes the intent plain.
// zeroPortOK allows tcp port 0, which a server can listen on but a client
// cannot dial.
func CheckEndpoint(s string, zeroPortOK bool) error {
	const forms = "want unix:///absolute/path.sock or tcp://host:port"
	switch {
	case s == "":
		return fmt.Errorf("empty endpoint: %s", forms)
	case strings.HasPrefix(s, "unix://"):
		path := strings.TrimPrefix(s, "unix://")
		if path == "" || !filepath.IsAbs(path) {
			return fmt.Errorf("endpoint %q: the socket path must be absolute (unix:///path.sock)", s)
		}
		return nil
	case strings.HasPrefix(s, "tcp://"):
		_, port, err := net.SplitHostPort(strings.TrimPrefix(s, "tcp://"))
		if err != nil {
			return fmt.Errorf("endpoint %q: %v: %s", s, err, forms)
		}
		n, err := strconv.ParseUint(port, 10, 16)
		if err != nil || (n == 0 && !zeroPortOK) {
			return fmt.Errorf("endpoint %q: port %q is not a number from 1 to 65535", s, port)
		}
		return nil
	}
	return fmt.Errorf("endpoint %q: %s", s, forms)
}

// CheckListenAddress checks a host:port to listen on. Empty, and "0" when
// zeroDisables, turn the listener off (controller-runtime's convention for
// its metrics and probe servers).
func CheckListenAddress(addr string, zeroDisables bool) error {
	if addr == "" || (zeroDisables && addr == "0") {
		return nil
	}
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("%q is not host:port: %v", addr, err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("%q: port %q is not a number from 0 to 65535", addr, port)
	}
	return nil
}

// NoArgs is cobra.NoArgs returning a UsageError: the programs take flags only.
func NoArgs(cmd *cobra.Command, args []string) error {
	if err := cobra.NoArgs(cmd, args); err != nil {
		return &UsageError{Err: err}
	}
	return nil
}

// ServeEndpoint resolves and checks the endpoint a driver plugin serves at:
// *endpoint, or $MILLWRIGHT_DRIVER_ENDPOINT when it is empty (stored back).
func ServeEndpoint(endpoint *string) error {
	if *endpoint == "" {
		*endpoint = os.Getenv(driver.EndpointEnv)
	}
	if *endpoint == "" {
		return fmt.Errorf("required (or set %s): unix:///path.sock or tcp://host:port", driver.EndpointEnv)
	}
	return CheckEndpoint(*endpoint, true)
}
