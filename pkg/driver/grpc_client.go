package driver

import (
	"context"
	"fmt"
	"net"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	driverv1 "github.com/millwright-dev/millwright/api/driver/v1"
)

// Defaults of the client's options.
const (
	// DefaultCallTimeout bounds a call whose context has no earlier
	// deadline. Drivers answer quickly and report long operations through
	// later calls (LastKnownState, Uninitialized), so a minute means the
	// plugin is stuck; the controller then retries with backoff.
	DefaultCallTimeout = time.Minute
	// DefaultReadyWait is how long a call waits for a plugin that is not
	// connected (restarting) before it fails with Unavailable.
	DefaultReadyWait = 5 * time.Second
)

// Client is a Driver that calls a driver plugin over gRPC. Make one with
// Dial and Close it when done. It is safe for concurrent use; one Client
// per plugin is enough.
type Client struct {
	conn        *grpc.ClientConn
	rpc         driverv1.DriverClient
	callTimeout time.Duration
	readyWait   time.Duration
}

var _ Driver = (*Client)(nil)

// DialOption configures Dial.
type DialOption func(*dialOptions)

type dialOptions struct {
	callTimeout time.Duration
	readyWait   time.Duration
	tls         *TLSFiles
	grpc        []grpc.DialOption
}

// WithCallTimeout bounds every call whose context has no earlier deadline
// (default DefaultCallTimeout). A caller's earlier deadline always wins; zero
// or less leaves calls bounded by the caller's context alone.
func WithCallTimeout(d time.Duration) DialOption {
	return func(o *dialOptions) { o.callTimeout = d }
}

// WithReadyWait sets how long a call waits for the connection to the
// plugin to be (re)established before failing with Unavailable (default
// DefaultReadyWait); the wait counts against the call's deadline. Zero or
// less fails at once while the plugin is unreachable.
func WithReadyWait(d time.Duration) DialOption {
	return func(o *dialOptions) { o.readyWait = d }
}

// WithGRPCDialOptions adds gRPC dial options, applied after the client's
// own: for example transport credentials for a plugin reached over TCP
// (the default is plaintext, meant for a unix socket shared with a sidecar;
// WithTLS is mutual TLS from PEM files).
func WithGRPCDialOptions(opts ...grpc.DialOption) DialOption {
	return func(o *dialOptions) { o.grpc = append(o.grpc, opts...) }
}

// Dial returns a Client for the plugin at endpoint: unix:///path.sock,
// tcp://host:port or host:port. It does not wait for the plugin: the
// connection is made by the first call and remade whenever the plugin
// restarts, so a plugin that starts after the manager, or restarts, is
// picked up without a new Dial.
func Dial(endpoint string, opts ...DialOption) (*Client, error) {
	ep, err := parseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	if ep.network == "tcp" {
		if _, port, _ := net.SplitHostPort(ep.address); port == "0" {
			return nil, fmt.Errorf("driver endpoint %q: port 0 can be listened on but not dialled", endpoint)
		}
	}
	o := dialOptions{callTimeout: DefaultCallTimeout, readyWait: DefaultReadyWait}
	for _, opt := range opts {
		opt(&o)
	}
	creds := grpc.WithTransportCredentials(insecure.NewCredentials())
	if o.tls != nil && !o.tls.IsZero() {
		if creds, err = clientCredentials(*o.tls); err != nil {
			return nil, fmt.Errorf("driver endpoint %q: %w", endpoint, err)
		}
	}
	grpcOpts := append([]grpc.DialOption{
		creds,
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(maxMessageSize), grpc.MaxCallSendMsgSize(maxMessageSize)),
		// gRPC's default backoff grows to two minutes between reconnection
		// attempts: after a long outage a restarted plugin would sit unused
		// that long. A local plugin is cheap to knock on every second.
		grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: 5 * time.Second,
		}),
	}, o.grpc...)
	conn, err := grpc.NewClient(ep.String(), grpcOpts...)
	if err != nil {
		return nil, fmt.Errorf("driver endpoint %q: %w", endpoint, err)
	}
	return &Client{
		conn:        conn,
		rpc:         driverv1.NewDriverClient(conn),
		callTimeout: o.callTimeout,
		readyWait:   o.readyWait,
	}, nil
}

// Close closes the connection; calls in flight fail with Canceled.
func (c *Client) Close() error { return c.conn.Close() }

// begin prepares a call: it applies the call timeout (context.WithTimeout
// keeps an earlier deadline of the caller) and waits, briefly, for the
// connection.
//
// Why not gRPC's WaitForReady: it waits for the whole deadline. While a
// plugin is down for long, every reconcile worker would hang for a minute
// per call; failing fast lets the controller back off and retry instead.
// Failing immediately (gRPC's default) is the other extreme: every call in
// the second a plugin takes to restart would fail and be reported on its
// Machine. A short wait rides out a restart and still fails fast in an
// outage.
func (c *Client) begin(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.callTimeout > 0 {
		ctx, cancel := context.WithTimeout(ctx, c.callTimeout)
		c.waitReady(ctx)
		return ctx, cancel
	}
	c.waitReady(ctx)
	return ctx, func() {}
}

func (c *Client) waitReady(ctx context.Context) {
	state := c.conn.GetState()
	if state == connectivity.Ready || c.readyWait <= 0 {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, c.readyWait)
	defer cancel()
	c.conn.Connect() // leave Idle; a no-op in any other state
	for state != connectivity.Ready && state != connectivity.Shutdown {
		if !c.conn.WaitForStateChange(ctx, state) {
			return // the call goes ahead and fails with a precise status
		}
		state = c.conn.GetState()
	}
}
