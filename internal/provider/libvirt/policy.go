package libvirt

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DefaultBootFileDir is where classes' kernels and initramfs images must
// be by default.
const DefaultBootFileDir = "/var/lib/millwright/boot"

// Policy is what the driver lets a MachineClass use. A class is made by
// whoever may create MachineClasses in its namespace, a tenant; the
// libvirt host is the operator's: a class reaches only the daemons, boot
// files and host addresses the operator listed (docs/security.md,
// "libvirt providerSpec").
type Policy struct {
	// AllowedURIs are the libvirt daemons classes may name besides the
	// driver's DefaultURI.
	AllowedURIs []string
	// BootFileDirs hold the kernels and initramfs images classes may boot
	// (a file anywhere under one, symbolic links resolved); empty:
	// DefaultBootFileDir.
	BootFileDirs []string
	// AllowedForwards are the host addresses a guest forward may reach:
	// "HOST:PORT", or "HOST" for every port of it. Empty: none.
	AllowedForwards []string
	// AllowUnrestrictedNetwork lets a class ask for a user-mode network
	// that is not restricted (restrict: false), whose guests reach every
	// service listening on the libvirt host's loopback.
	AllowUnrestrictedNetwork bool
	// RelayMaxConnections bounds the connections of one VM its relays carry
	// at once; default relay.DefaultMaxConnections.
	RelayMaxConnections int
}

// checkURI refuses a libvirt daemon the policy does not list.
func (p *Policy) checkURI(uri, defaultURI string) error {
	if uri != defaultURI && !slices.Contains(p.AllowedURIs, uri) {
		return invalid("providerSpec.uri", "%q is not a libvirt daemon this driver lets classes use (millwright-libvirt --allowed-uri)", uri)
	}
	return nil
}

// checkBootFile refuses a kernel or initramfs outside the boot file
// directories. On this host the path's symbolic links are resolved first,
// so a link in a boot directory cannot point elsewhere; a remote daemon's
// path is judged as written, once cleaned.
func (p *Policy) checkBootFile(field, path, uri string) error {
	if path == "" {
		return nil
	}
	dirs := p.BootFileDirs
	if len(dirs) == 0 {
		dirs = []string{DefaultBootFileDir}
	}
	clean := filepath.Clean(path)
	local := isLocal(uri)
	if !filepath.IsAbs(clean) {
		return invalid(field, "%q is not an absolute path", path)
	}
	inside := func(p string) bool {
		for _, d := range dirs {
			d = filepath.Clean(d)
			if local {
				if r, err := filepath.EvalSymlinks(d); err == nil {
					d = r
				}
			}
			if rel, err := filepath.Rel(d, p); err == nil && rel != ".." && !strings.HasPrefix(rel, "../") {
				return true
			}
		}
		return false
	}
	// Judged as written first: a path outside every directory is refused
	// without looking at the file, so the answer says nothing of it.
	if !inside(clean) {
		return invalid(field, "%q is not under a boot file directory of this driver (millwright-libvirt --boot-file-dir)", path)
	}
	if !local {
		return nil
	}
	resolved, err := filepath.EvalSymlinks(clean)
	if err != nil {
		return invalid(field, "%q: %v", path, errors.Unwrap(err))
	}
	if !inside(resolved) {
		return invalid(field, "%q leads out of the boot file directories of this driver (millwright-libvirt --boot-file-dir)", path)
	}
	fi, err := os.Stat(resolved)
	if err == nil && !fi.Mode().IsRegular() {
		err = errors.New("not a regular file")
	}
	if err != nil {
		return invalid(field, "%q: %v", path, err)
	}
	return nil
}

// checkForward refuses a guest forward to a host address the policy does
// not list.
func (p *Policy) checkForward(field, hostPort string) error {
	host, _, err := net.SplitHostPort(hostPort)
	if err == nil {
		for _, a := range p.AllowedForwards {
			if a == hostPort || a == host {
				return nil
			}
		}
	}
	return invalid(field, "%q is not a host address this driver lets guests reach (millwright-libvirt --allowed-forward)", hostPort)
}

// checkImage refuses a Machine's own volume as an image: another VM's
// disk, seed (its bootstrap token) or state volume (its node key).
func checkImage(image string) error {
	if strings.HasPrefix(image, domainPrefix) {
		return invalid("providerSpec.image", "%q: volumes named %s... are Machines' own (disks, seeds, state) and never an image", image, domainPrefix)
	}
	return nil
}

// checkURI refuses a call that would connect to a libvirt daemon the
// driver's policy does not list. Every call is checked, not only creates:
// a class names the daemon the driver dials.
func (d *Driver) checkURI(uri string) error {
	return d.opts.Policy.checkURI(uri, d.opts.DefaultURI)
}

// checkPolicy checks what a create on the libvirt daemon at uri would give
// the VM of spec s against the driver's policy: its image, boot files and
// network. The refusal is an
// InvalidArgument naming the field, saying no more of the host than the
// class did (not whether a file outside the boot directories exists).
func (d *Driver) checkPolicy(s *spec, uri string) error {
	p := &d.opts.Policy
	if err := checkImage(s.Image); err != nil {
		return err
	}
	for _, f := range []struct{ field, path string }{{"providerSpec.kernel", s.Kernel}, {"providerSpec.initramfs", s.Initramfs}} {
		if err := p.checkBootFile(f.field, f.path, uri); err != nil {
			return err
		}
	}
	if s.Network == nil || s.Network.User == nil {
		return nil
	}
	if !s.Network.User.restricted() && !p.AllowUnrestrictedNetwork {
		return invalid("providerSpec.network.user.restrict", "false is not allowed by this driver: an unrestricted guest reaches every service on the libvirt host's loopback (millwright-libvirt --allow-unrestricted-network)")
	}
	for i, f := range s.Network.User.GuestForwards {
		if err := p.checkForward(fmt.Sprintf("providerSpec.network.user.guestForwards[%d].host", i), f.Host); err != nil {
			return err
		}
	}
	return nil
}

// isLocal reports whether uri is a libvirt daemon on this host, whose
// files the driver can look at.
func isLocal(uri string) bool {
	u, err := url.Parse(uri)
	return err == nil && u.Host == ""
}
