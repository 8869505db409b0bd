package libvirt

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/digitalocean/go-libvirt/socket/dialers"
	"golang.org/x/sync/singleflight"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// dialTimeout bounds connecting to a libvirt daemon: a call waiting on an
// unreachable daemon answers Unavailable quickly, and is retried.
const dialTimeout = 3 * time.Second

// conn is a connection to one libvirt daemon.
type conn struct {
	uri  string
	l    *golibvirt.Libvirt
	host string // the daemon's host name, part of every providerID
}

// conns keeps one connection per libvirt URI, reconnecting when one drops.
type conns struct {
	mu sync.Mutex
	m  map[string]*conn
	// dials makes callers of one URI share its dial, outside mu: a daemon
	// slow to answer holds up the calls for its URI only.
	dials singleflight.Group
	// hostName asks a daemon its host name; nil asks libvirt
	// (ConnectGetHostname). Tests rename the host through it.
	hostName func(*golibvirt.Libvirt) (string, error)
}

// get returns a live connection to uri, dialling if there is none. A
// daemon that cannot be reached is Unavailable, so callers retry.
func (cs *conns) get(ctx context.Context, uri string) (*conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if c := cs.live(uri); c != nil {
		return c, nil
	}
	v, err, _ := cs.dials.Do(uri, func() (any, error) {
		if c := cs.live(uri); c != nil {
			return c, nil
		}
		cs.mu.Lock()
		hostName := cs.hostName
		cs.mu.Unlock()
		c, err := dial(uri, hostName)
		if err != nil {
			return nil, driver.Errorf(driver.Unavailable, "libvirt at %s is unreachable: %v", uri, err)
		}
		cs.mu.Lock()
		defer cs.mu.Unlock()
		if cs.m == nil {
			cs.m = map[string]*conn{}
		}
		cs.m[uri] = c
		return c, nil
	})
	if err != nil {
		return nil, err
	}
	return v.(*conn), nil
}

// live returns the connection to uri if it is up.
func (cs *conns) live(uri string) *conn {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if c := cs.m[uri]; c != nil && c.l.IsConnected() {
		return c
	}
	return nil
}

// closeAll disconnects every connection.
func (cs *conns) closeAll() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for uri, c := range cs.m {
		_ = c.l.Disconnect()
		delete(cs.m, uri)
	}
}

func dial(uri string, hostName func(*golibvirt.Libvirt) (string, error)) (*conn, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return nil, err
	}
	var l *golibvirt.Libvirt
	if u.Host == "" && (u.Scheme == "qemu" || u.Scheme == "qemu+unix") {
		// go-libvirt's own URI dialer waits 15 s for a local socket; a
		// daemon that is not running should be reported at once.
		opts := []dialers.LocalOption{dialers.WithLocalTimeout(dialTimeout)}
		if s := u.Query().Get("socket"); s != "" {
			opts = append(opts, dialers.WithSocket(s))
		}
		l = golibvirt.NewWithDialer(dialers.NewLocal(opts...))
		if err := l.ConnectToURI(golibvirt.RemoteURI(u)); err != nil {
			return nil, err
		}
	} else if l, err = golibvirt.ConnectToURI(u); err != nil {
		return nil, err
	}
	if hostName == nil {
		hostName = (*golibvirt.Libvirt).ConnectGetHostname
	}
	host, err := hostName(l)
	if err != nil {
		_ = l.Disconnect()
		return nil, fmt.Errorf("asking the host name: %w", err)
	}
	return &conn{uri: uri, l: l, host: host}, nil
}

// errorf turns a failed libvirt call into a driver error: a lost
// connection is Unavailable (the call is retried once libvirt is back), a
// missing object NotFound, anything else Unknown (retried) with libvirt's
// message.
func (c *conn) errorf(err error, format string, args ...any) error {
	what := fmt.Sprintf(format, args...)
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if !c.l.IsConnected() {
		return driver.Errorf(driver.Unavailable, "%s: lost the connection to libvirt at %s: %v", what, c.uri, err)
	}
	var le golibvirt.Error
	if errors.As(err, &le) {
		switch golibvirt.ErrorNumber(le.Code) {
		case golibvirt.ErrNoDomain, golibvirt.ErrNoStorageVol, golibvirt.ErrNoStoragePool, golibvirt.ErrNoDomainMetadata:
			return driver.Errorf(driver.NotFound, "%s: %s", what, le.Message)
		case golibvirt.ErrOperationDenied, golibvirt.ErrAuthFailed, golibvirt.ErrAccessDenied:
			return driver.Errorf(driver.PermissionDenied, "%s: %s", what, le.Message)
		}
		return driver.Errorf(driver.Unknown, "%s: %s", what, le.Message)
	}
	return driver.Errorf(driver.Unknown, "%s: %v", what, err)
}

// isCode reports whether err is the libvirt error n.
func isCode(err error, n golibvirt.ErrorNumber) bool {
	var le golibvirt.Error
	return errors.As(err, &le) && golibvirt.ErrorNumber(le.Code) == n
}
