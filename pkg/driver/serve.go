package driver

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"google.golang.org/grpc"
)

// EndpointEnv names the environment variable Serve reads the endpoint from
// when --endpoint is not given: a sidecar's manifest can set it once.
const EndpointEnv = "MILLWRIGHT_DRIVER_ENDPOINT"

// stopGracePeriod is how long a stopping plugin lets calls in flight finish
// before it cuts them off. Callers retry a cut-off call; a plugin that never
// exits blocks a rollout of the plugin itself.
const stopGracePeriod = 10 * time.Second

// Serve serves d as a driver plugin until the process gets SIGINT or
// SIGTERM, then stops gracefully. It is all a provider's main needs:
//
//	func main() {
//		if err := driver.Serve(myDriver); err != nil {
//			log.Fatal(err)
//		}
//	}
//
// The endpoint comes from the --endpoint flag, or else from the
// MILLWRIGHT_DRIVER_ENDPOINT environment variable (see Dial for its forms);
// --tls-cert, --tls-key and --tls-client-ca (or TLSCertEnv, TLSKeyEnv and
// TLSClientCAEnv) serve mutual TLS (WithServerTLS).
// Serve defines --endpoint on flag.CommandLine and parses the command line
// unless the program already did, so a provider may define flags of its own
// before calling it. A program that parses its flags some other way calls
// ServeEndpoint.
func Serve(d Driver) error {
	if flag.Lookup("endpoint") == nil {
		flag.String("endpoint", "", "where to serve the driver: unix:///path.sock, tcp://host:port or host:port (default $"+EndpointEnv+")")
	}
	for _, f := range []struct{ name, env, usage string }{
		{"tls-cert", TLSCertEnv, "serve mutual TLS with this PEM certificate"},
		{"tls-key", TLSKeyEnv, "the private key of --tls-cert"},
		{"tls-client-ca", TLSClientCAEnv, "serve mutual TLS: refuse every client without a certificate from this PEM CA bundle"},
	} {
		if flag.Lookup(f.name) == nil {
			flag.String(f.name, "", f.usage+" (default $"+f.env+")")
		}
	}
	if !flag.Parsed() {
		flag.Parse()
	}
	// A flag wins over its environment variable, one by one.
	files := tlsFromEnv()
	for name, v := range map[string]*string{"tls-cert": &files.Cert, "tls-key": &files.Key, "tls-client-ca": &files.CA} {
		if s := flag.Lookup(name).Value.String(); s != "" {
			*v = s
		}
	}
	endpoint := flag.Lookup("endpoint").Value.String()
	if endpoint == "" {
		endpoint = os.Getenv(EndpointEnv)
	}
	if endpoint == "" {
		return fmt.Errorf("no driver endpoint: pass --endpoint or set %s", EndpointEnv)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return ServeEndpoint(ctx, endpoint, d, WithServerTLS(files))
}

// ServeEndpoint serves d as a driver plugin at endpoint until ctx is done,
// then stops gracefully and returns nil. A unix socket left behind by a
// plugin that died is removed first; one a live plugin still serves is not.
// It serves mutual TLS with WithServerTLS, or, without that option, when
// TLSCertEnv, TLSKeyEnv and TLSClientCAEnv name the files: every program
// built on it gets mutual TLS from its environment.
func ServeEndpoint(ctx context.Context, endpoint string, d Driver, opts ...ServeOption) error {
	o := serveOptions{}
	for _, opt := range opts {
		opt(&o)
	}
	files := tlsFromEnv()
	if o.tls != nil {
		files = *o.tls
	}
	ep, err := parseEndpoint(endpoint)
	if err != nil {
		return err
	}
	var grpcOpts []grpc.ServerOption
	if !files.IsZero() {
		creds, err := serverCredentials(files)
		if err != nil {
			return err
		}
		grpcOpts = append(grpcOpts, grpc.Creds(creds))
	}
	lis, err := listen(ep)
	if err != nil {
		return err
	}
	srv, health, stopping := newGRPCServer(d, grpcOpts...)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	slog.Info("serving driver", "endpoint", endpoint, "address", lis.Addr().String(), "mutualTLS", !files.IsZero())
	if ep.network == "tcp" && files.IsZero() {
		slog.Warn("serving the driver over TCP without TLS: whoever reaches the port can create and delete VMs and reads what the manager sends (docs/security.md)", "endpoint", endpoint)
	}

	select {
	case err := <-served:
		return fmt.Errorf("serving driver at %s: %w", endpoint, err)
	case <-ctx.Done():
	}
	// Health checks see the plugin going (every service NOT_SERVING) while
	// calls in flight drain.
	health.Shutdown()
	stopping()
	stopped := make(chan struct{})
	go func() { srv.GracefulStop(); close(stopped) }()
	timer := time.NewTimer(stopGracePeriod)
	defer timer.Stop()
	select {
	case <-stopped:
	case <-timer.C:
		srv.Stop()
		<-stopped
	}
	<-served // nil after a stop; the unix listener removes its socket
	slog.Info("driver stopped", "endpoint", endpoint)
	return nil
}

// listen listens on ep, first removing a stale unix socket: a plugin killed
// without a chance to clean up leaves its socket file, and binding to an
// existing path fails. A path that is not a socket, or a socket a live
// process answers on, is left alone and reported.
func listen(ep endpoint) (net.Listener, error) {
	if ep.network == "unix" {
		if err := removeStaleSocket(ep.address); err != nil {
			return nil, err
		}
	}
	lis, err := net.Listen(ep.network, ep.address)
	if err != nil {
		return nil, fmt.Errorf("listening for the driver: %w", err)
	}
	return lis, nil
}

func removeStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("driver socket %s: %w", path, err)
	}
	if fi.Mode().Type() != fs.ModeSocket {
		return fmt.Errorf("driver socket %s: the path exists and is not a socket; not removing it", path)
	}
	if conn, err := net.DialTimeout("unix", path, time.Second); err == nil {
		conn.Close()
		return fmt.Errorf("driver socket %s: another process is serving on it", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("removing stale driver socket %s: %w", path, err)
	}
	return nil
}
