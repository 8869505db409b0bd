// Package libvirtd makes sure a libvirt daemon (libvirtd, and virtlogd,
// which writes the VMs' console logs) runs on this host, for tests and the
// local cluster: it starts the daemons that are not running, through the
// local cluster's process launcher, and stops only those it started. The
// packages come from hack/tools/libvirt.sh (make tools).
package libvirtd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"time"

	"github.com/millwright-dev/millwright/internal/localcluster"
)

// The daemons' sockets (qemu:///system's, and virtlogd's).
const (
	Socket         = "/var/run/libvirt/libvirt-sock"
	VirtlogdSocket = "/var/run/libvirt/virtlogd-sock"
)

const (
	// startTimeout bounds a daemon's start: libvirtd probes QEMU's
	// capabilities first, which takes seconds on a busy host.
	startTimeout = time.Minute
	stopGrace    = 15 * time.Second
)

// Daemons are the daemons Ensure started.
type Daemons struct {
	started []*localcluster.Process // in start order
	names   []string                // of started, in the same order
	logDir  string
}

// Ensure starts virtlogd and libvirtd unless they answer on their sockets
// already, logging into logDir, and records this process as their user
// until Stop. It fails, saying why, when they are not installed or do not
// come up; it needs root, as qemu:///system does.
func Ensure(ctx context.Context, logDir string) (*Daemons, error) {
	d := &Daemons{logDir: logDir}
	err := withLock(func() error {
		if err := register(); err != nil {
			return err
		}
		for _, daemon := range []struct{ name, socket string }{{"virtlogd", VirtlogdSocket}, {"libvirtd", Socket}} {
			if answers(daemon.socket) {
				continue
			}
			if err := d.start(ctx, daemon.name, daemon.socket, logDir); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		_ = d.Stop(ctx)
		return nil, err
	}
	return d, nil
}

// Started reports whether Ensure started any daemon.
func (d *Daemons) Started() bool { return len(d.started) > 0 }

func (d *Daemons) start(ctx context.Context, name, socket, logDir string) error {
	path, err := binary(name)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		return fmt.Errorf("%s is not running and starting it needs root (this is uid %d)", name, os.Geteuid())
	}
	// In the foreground (no --daemon), so the launcher tracks and stops it.
	p, err := localcluster.StartProcess(name, path, nil, nil, filepath.Join(logDir, name+".log"))
	if err != nil {
		return err
	}
	deadline := time.Now().Add(startTimeout)
	for !answers(socket) {
		if exited, how := p.Exited(); exited {
			return fmt.Errorf("%s exited at start (%v); last lines of its log:\n%s", name, how, p.LogTail(20))
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			_ = p.Stop(stopGrace)
			return fmt.Errorf("%s did not answer on %s within %s; last lines of its log:\n%s", name, socket, startTimeout, p.LogTail(20))
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.started = append(d.started, p)
	d.names = append(d.names, name)
	return nil
}

// CanRestartLibvirtd says why RestartLibvirtd cannot work, if it cannot:
// Ensure did not start libvirtd.
func (d *Daemons) CanRestartLibvirtd() error {
	if !slices.Contains(d.names, "libvirtd") {
		return fmt.Errorf("libvirtd was running before this process started (by the host's service manager or another test binary): " +
			"this process can only restart a libvirtd it started; stop that libvirtd (and the processes using it) and run again")
	}
	return nil
}

// RestartLibvirtd stops libvirtd with SIGTERM, as a service manager's
// restart or a package upgrade does, and starts it again, for tests of what
// survives a restart: QEMU processes are not libvirtd's children (libvirtd
// daemonizes them), so running VMs keep running, and clients must
// reconnect. It needs the libvirtd that Ensure started, and fails saying so
// otherwise: one started by the host's service manager or by another
// process is not this process's to restart. It waits (until ctx ends) for
// other processes using the daemons to be done, as the restart would break
// their connections.
func (d *Daemons) RestartLibvirtd(ctx context.Context) error {
	if err := d.CanRestartLibvirtd(); err != nil {
		return err
	}
	i := slices.Index(d.names, "libvirtd")
	for {
		var done bool
		err := withLock(func() error {
			if n := otherUsers(); n > 0 {
				if ctx.Err() != nil {
					return fmt.Errorf("libvirtd not restarted: %d other processes still use it (%s)", n, usersDir)
				}
				return nil
			}
			done = true
			if err := d.started[i].Stop(stopGrace); err != nil {
				return err
			}
			d.started = slices.Delete(d.started, i, i+1)
			d.names = slices.Delete(d.names, i, i+1)
			return d.start(ctx, "libvirtd", Socket, d.logDir)
		})
		if done || err != nil {
			return err
		}
		time.Sleep(time.Second)
	}
}

// Stop ends this process's use of the daemons. The daemons it started
// are stopped, the last started first, once no other process uses them:
// until then (or until ctx ends) Stop waits, as they die with this process.
func (d *Daemons) Stop(ctx context.Context) error {
	unregister()
	if len(d.started) == 0 {
		return nil
	}
	for {
		var stopped bool
		var errs []error
		_ = withLock(func() error {
			if otherUsers() > 0 && ctx.Err() == nil {
				return nil
			}
			for i := len(d.started) - 1; i >= 0; i-- {
				errs = append(errs, d.started[i].Stop(stopGrace))
			}
			d.started, d.names, stopped = nil, nil, true
			return nil
		})
		if stopped {
			return errors.Join(errs...)
		}
		time.Sleep(time.Second)
	}
}

// binary finds a daemon: in PATH, or in /usr/sbin, which a non-login
// shell's PATH may lack.
func binary(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	p := filepath.Join("/usr/sbin", name)
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("%s is not installed: run `make tools` (hack/tools/libvirt.sh installs libvirt and QEMU)", name)
	}
	return p, nil
}

// answers reports whether a daemon accepts connections on socket.
func answers(socket string) bool {
	c, err := net.DialTimeout("unix", socket, time.Second)
	if err != nil {
		return false
	}
	_ = c.Close()
	return true
}
