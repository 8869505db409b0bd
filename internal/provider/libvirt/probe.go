package libvirt

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/millwright-dev/millwright/internal/logtail"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// DefaultProbeTimeout bounds the KVM probe: a kernel under KVM ends its
// boot in a few seconds; one whose KVM hangs (broken nested
// virtualization) never does.
const DefaultProbeTimeout = 30 * time.Second

// probeBooted is what the probe kernel prints last: booted without a root
// or an init, it panics, and that proves every step before worked.
const probeBooted = "end Kernel panic"

// probePrefix starts the probe domains' names. They are transient and
// carry no Millwright metadata: no listing ever shows them.
const probePrefix = "mw-kvm-probe-"

// Verdict is what the KVM probe found on one libvirt host.
type Verdict struct {
	// KVM reports whether KVM guests boot there.
	KVM bool
	// Why says how the probe decided.
	Why string
}

// probe is one libvirt host's KVM probe: running until done is closed.
type probe struct {
	done    chan struct{}
	verdict Verdict
	err     error // no verdict: the probe could not run
}

// probes keeps the probe of each libvirt URI: a verdict is reached once
// per driver process and host.
type probes struct {
	mu sync.Mutex
	m  map[string]*probe
}

// autoDomainType resolves domainType auto: kvm once the probe proved a KVM
// guest boots on the class's host, qemu when it proved the contrary. The
// probe runs in the background, once per host: a call that cannot wait for
// it (its deadline comes first) answers Aborted and is retried.
func (d *Driver) autoDomainType(ctx context.Context, c *conn, s *spec) (string, error) {
	p := d.startProbe(c, s.Kernel)
	wait := ctx
	if dl, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		wait, cancel = context.WithDeadline(ctx, dl.Add(-replyMargin))
		defer cancel()
	}
	select {
	case <-p.done:
	case <-wait.Done():
		if err := ctx.Err(); err != nil {
			return "", err
		}
		return "", driver.Errorf(driver.Aborted, "probing whether KVM guests boot on libvirt at %s (up to %s); CreateMachine goes on once that is known", c.uri, d.opts.ProbeTimeout)
	}
	if p.err != nil {
		return "", driver.Errorf(driver.Unavailable, "probing whether KVM guests boot on libvirt at %s: %v", c.uri, p.err)
	}
	if p.verdict.KVM {
		return DomainTypeKVM, nil
	}
	return DomainTypeQEMU, nil
}

// KVMVerdict returns the probe's verdict on the libvirt host of uri, and
// whether there is one yet.
func (d *Driver) KVMVerdict(uri string) (Verdict, bool) {
	d.probes.mu.Lock()
	p := d.probes.m[uri]
	d.probes.mu.Unlock()
	if p == nil {
		return Verdict{}, false
	}
	select {
	case <-p.done:
		return p.verdict, p.err == nil
	default:
		return Verdict{}, false
	}
}

// startProbe returns the probe of c's host, starting it if there is none.
func (d *Driver) startProbe(c *conn, kernel string) *probe {
	d.probes.mu.Lock()
	defer d.probes.mu.Unlock()
	if p := d.probes.m[c.uri]; p != nil {
		return p
	}
	p := &probe{done: make(chan struct{})}
	if d.probes.m == nil {
		d.probes.m = map[string]*probe{}
	}
	d.probes.m[c.uri] = p
	go func() {
		v, err := d.runProbe(c, kernel)
		if err != nil {
			// Not a verdict (libvirt went away, say): the next call probes again.
			d.opts.Logger.Warn("KVM probe failed; it is tried again", "uri", c.uri, "err", err)
			d.probes.mu.Lock()
			delete(d.probes.m, c.uri)
			d.probes.mu.Unlock()
			p.err = err
		} else {
			d.opts.Logger.Info("KVM probe", "uri", c.uri, "kvm", v.KVM, "why", v.Why)
		}
		p.verdict = v
		close(p.done)
	}()
	return p
}

// runProbe boots kernel under KVM in a transient domain and reports
// whether it reached the end of its boot within ProbeTimeout. An error is
// no verdict.
func (d *Driver) runProbe(c *conn, kernel string) (Verdict, error) {
	if u, err := url.Parse(c.uri); err != nil || u.Host != "" {
		return Verdict{Why: "the probe's console cannot be read from this host; using qemu"}, nil
	}
	// Stale probes go whatever this probe finds: a host without KVM now
	// may keep those of a driver killed mid-probe.
	destroyStaleProbes(c, time.Now().Add(-2*d.opts.ProbeTimeout))
	if _, err := c.l.ConnectGetDomainCapabilities(golibvirt.OptString{}, golibvirt.OptString{"x86_64"}, golibvirt.OptString{}, golibvirt.OptString{DomainTypeKVM}, 0); err != nil {
		if !c.l.IsConnected() {
			return Verdict{}, err
		}
		return Verdict{Why: "the host offers no KVM: " + err.Error()}, nil
	}
	name := probeName(time.Now())
	log := ConsoleLog(d.opts.ConsoleDir, name)
	defer os.Remove(log)
	defer os.Remove(QEMULog(d.opts.QEMULogDir, name))
	x, err := probeXML(name, kernel, log)
	if err != nil {
		return Verdict{}, err
	}
	dom, err := c.l.DomainCreateXML(x, 0)
	if err != nil {
		if !c.l.IsConnected() {
			return Verdict{}, err
		}
		return Verdict{Why: "a KVM guest does not start: " + err.Error()}, nil
	}
	defer func() { _ = c.l.DomainDestroy(dom) }()
	deadline := time.Now().Add(d.opts.ProbeTimeout)
	for time.Now().Before(deadline) {
		if strings.Contains(logtail.Tail(log, 100), probeBooted) {
			return Verdict{KVM: true, Why: "a KVM guest booted its kernel"}, nil
		}
		if active, err := c.l.DomainIsActive(dom); err != nil || active == 0 {
			if !c.l.IsConnected() {
				return Verdict{}, err
			}
			return Verdict{Why: "the KVM guest stopped before its kernel booted"}, nil
		}
		time.Sleep(200 * time.Millisecond)
	}
	return Verdict{Why: fmt.Sprintf("a KVM guest did not finish booting its kernel within %s (broken nested virtualization hangs so)", d.opts.ProbeTimeout)}, nil
}

// probeName names a probe domain started at: the start time in its name
// tells a stale probe from one another driver instance is running.
func probeName(started time.Time) string {
	return probePrefix + strconv.FormatInt(started.UnixNano(), 10)
}

// destroyStaleProbes destroys the probe domains a driver stopped mid-probe
// left running: transient, they go away once destroyed, and a probe's
// kernel halts without powering off, so nothing else would end them. Only
// those started before staleBefore: a younger one is another driver
// instance's probe, running (each ends within its probe timeout), and
// destroying it would make that probe's verdict a wrong "qemu".
func destroyStaleProbes(c *conn, staleBefore time.Time) {
	doms, _, err := c.l.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive|golibvirt.ConnectListDomainsTransient)
	if err != nil {
		return // the probe itself will say what is wrong
	}
	for _, dom := range doms {
		started, ok := strings.CutPrefix(dom.Name, probePrefix)
		if !ok {
			continue
		}
		if ns, err := strconv.ParseInt(started, 10, 64); err == nil && time.Unix(0, ns).After(staleBefore) {
			continue
		}
		_ = c.l.DomainDestroy(dom)
	}
}

// probeXML is a transient KVM domain booting kernel with nothing else: no
// disk, no network, its console logged to log.
func probeXML(name, kernel, log string) (string, error) {
	port := uint(0)
	return (&libvirtxml.Domain{
		Type:   DomainTypeKVM,
		Name:   name,
		Memory: &libvirtxml.DomainMemory{Value: uint(MinMemory.Value() / 1024), Unit: "KiB"},
		OS: &libvirtxml.DomainOS{
			Type:    &libvirtxml.DomainOSType{Type: "hvm", Arch: "x86_64", Machine: "pc"},
			Kernel:  kernel,
			Cmdline: "console=ttyS0",
		},
		OnPoweroff: "destroy", OnReboot: "destroy", OnCrash: "destroy",
		Devices: &libvirtxml.DomainDeviceList{
			Serials: []libvirtxml.DomainSerial{{
				Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}},
				Target: &libvirtxml.DomainSerialTarget{Port: &port},
				Log:    &libvirtxml.DomainChardevLog{File: log, Append: "off"},
			}},
			Controllers: []libvirtxml.DomainController{{Type: "usb", Model: "none"}},
			MemBalloon:  &libvirtxml.DomainMemBalloon{Model: "none"},
		},
	}).Marshal()
}
