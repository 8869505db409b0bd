package libvirt

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/logtail"
	"github.com/millwright-dev/millwright/internal/names"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// DefaultName is the driver's name, as MachineClass spec.provider names it.
const DefaultName = "libvirt"

// Version of the driver, as GetPluginInfo reports it.
const Version = "v0.1.0"

// DefaultConsoleDir is where serial consoles are logged by default:
// libvirt's own QEMU log directory, which virtlogd writes to.
const DefaultConsoleDir = "/var/log/libvirt/qemu"

// DefaultQEMULogDir is where libvirt's QEMU driver keeps each domain's own
// log (<dir>/<domain>.log: QEMU's command line, its errors, when it
// stopped) on a host where libvirtd runs as root, qemu:///system.
const DefaultQEMULogDir = "/var/log/libvirt/qemu"

// consoleTailLines is how much of the console an error message quotes.
const consoleTailLines = 20

// deletedConsoleLines is how much of the console the log of a deletion
// that did not go as asked quotes: enough for a kernel's stack dump (about
// 30 lines) and what came before it.
const deletedConsoleLines = 60

// progressLines is how much of a running VM's console GetMachineStatus
// reports as its progress.
const progressLines = 8

// Options configure a Driver.
type Options struct {
	// Name is the driver's name; default DefaultName.
	Name string
	// DefaultURI is the libvirt daemon of classes that name none; default
	// DefaultURI.
	DefaultURI string
	// ConsoleDir is where each VM's serial console is logged; default
	// DefaultConsoleDir. It is a directory on the libvirt host.
	ConsoleDir string
	// QEMULogDir is libvirt's directory of per-domain QEMU logs on the
	// libvirt host, from which a deletion removes the domain's; default
	// DefaultQEMULogDir.
	QEMULogDir string
	// Logger logs the connection's ups and downs; default slog.Default().
	Logger *slog.Logger
	// ProbeTimeout bounds the KVM probe of domainType auto; default
	// DefaultProbeTimeout.
	ProbeTimeout time.Duration
	// RelayBinary is the program, on the libvirt host, that QEMU runs as
	// `RelayBinary relay HOST:PORT` for each connection through a guest
	// forward (millwright-libvirt). Without it, a class with guest
	// forwards cannot be created (FailedPrecondition).
	RelayBinary string
	// Policy is what classes may use of the libvirt host.
	Policy Policy
}

// Driver runs each Machine as a libvirt domain. See docs/providers/libvirt.md.
type Driver struct {
	driver.UnimplementedDriver
	opts   Options
	conns  conns
	probes probes

	mu    sync.Mutex
	locks map[string]*sync.Mutex // per domain: one operation at a time
	// naming serializes the choice of Node names between creates.
	naming sync.Mutex
}

var _ driver.Driver = (*Driver)(nil)

// New returns a driver. It connects to libvirt on the first call that
// needs it; Start keeps watching the default URI.
func New(o Options) *Driver {
	if o.Name == "" {
		o.Name = DefaultName
	}
	if o.DefaultURI == "" {
		o.DefaultURI = DefaultURI
	}
	if o.ConsoleDir == "" {
		o.ConsoleDir = DefaultConsoleDir
	}
	if o.QEMULogDir == "" {
		o.QEMULogDir = DefaultQEMULogDir
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.ProbeTimeout == 0 {
		o.ProbeTimeout = DefaultProbeTimeout
	}
	return &Driver{opts: o, locks: map[string]*sync.Mutex{}}
}

// Close disconnects from every libvirt daemon.
func (d *Driver) Close() { d.conns.closeAll() }

// lock serializes the operations on one domain within this driver.
func (d *Driver) lock(name string) func() {
	d.mu.Lock()
	l := d.locks[name]
	if l == nil {
		l = &sync.Mutex{}
		d.locks[name] = l
	}
	d.mu.Unlock()
	l.Lock()
	return l.Unlock
}

// GetPluginInfo names the driver and its optional methods.
func (d *Driver) GetPluginInfo(context.Context, *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	return &driver.GetPluginInfoResponse{
		Name: d.opts.Name, Version: Version,
		Implements: []driver.Method{driver.MethodGetMachineStatus, driver.MethodListMachines},
	}, nil
}

// classSpec decodes the class's providerSpec.
func (d *Driver) classSpec(class *v1alpha1.MachineClass) (*spec, error) {
	if class == nil {
		return nil, invalid("machineClass", "must be given")
	}
	return decodeSpec(class.Spec.ProviderSpec.Raw, d.opts.DefaultURI)
}

// call is what a call about one Machine works with.
type call struct {
	spec *spec
	conn *conn
	name string // the Machine's domain
	// byProviderID is the Machine's name when the domain was named by a
	// providerID, not derived from the Machine's UID: the domain's
	// metadata must then name that Machine.
	byProviderID string
}

// begin checks a call about one Machine and connects to its class's
// libvirt: ctx's end, the providerSpec and the Machine come first, so a
// refused call touches nothing.
func (d *Driver) begin(ctx context.Context, class *v1alpha1.MachineClass, m *v1alpha1.Machine) (*call, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := d.classSpec(class)
	if err != nil {
		return nil, err
	}
	if err := checkMachine(m); err != nil {
		return nil, err
	}
	uri := machineURI(m, s)
	if err := d.checkURI(uri); err != nil {
		return nil, err
	}
	c, err := d.conns.get(ctx, uri)
	if err != nil {
		return nil, err
	}
	return &call{spec: s, conn: c, name: domainName(m)}, nil
}

// beginDelete is begin for DeleteMachine, which also accepts a Machine
// known only by its name and providerID: the orphan collector's. The
// providerID then names the domain, which must be on this libvirt host and
// made for a Machine of that name.
func (d *Driver) beginDelete(ctx context.Context, class *v1alpha1.MachineClass, m *v1alpha1.Machine) (*call, error) {
	if m == nil || m.UID != "" || m.Spec.ProviderID == "" {
		return d.begin(ctx, class, m)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := d.classSpec(class)
	if err != nil {
		return nil, err
	}
	if err := d.checkURI(s.URI); err != nil {
		return nil, err
	}
	c, err := d.conns.get(ctx, s.URI)
	if err != nil {
		return nil, err
	}
	name, ok := strings.CutPrefix(m.Spec.ProviderID, "libvirt://"+c.host+"/")
	if !ok || !strings.HasPrefix(name, domainPrefix) || strings.Contains(name, "/") {
		return nil, invalid("machine.spec.providerID", "%q is not a domain of libvirt at %s (want libvirt://%s/%s...)", m.Spec.ProviderID, c.uri, c.host, domainPrefix)
	}
	return &call{spec: s, conn: c, name: name, byProviderID: m.Name}, nil
}

func checkMachine(m *v1alpha1.Machine) error {
	switch {
	case m == nil:
		return invalid("machine", "must be given")
	case m.UID == "":
		return invalid("machine.metadata.uid", "must be set: it names the Machine's domain")
	}
	return nil
}

// found is a Millwright domain.
type found struct {
	dom  golibvirt.Domain
	meta *Meta
}

// lookup finds the domain name; nil when there is none. A domain of that
// name without Millwright's metadata is FailedPrecondition: it is someone
// else's, and is never touched.
func (c *conn) lookup(name string) (*found, error) {
	dom, err := c.l.DomainLookupByName(name)
	if isCode(err, golibvirt.ErrNoDomain) {
		return nil, nil
	}
	if err != nil {
		return nil, c.errorf(err, "looking up domain %s", name)
	}
	meta, err := c.meta(dom)
	if err != nil {
		return nil, err
	}
	if meta == nil {
		return nil, driver.Errorf(driver.FailedPrecondition, "libvirt at %s has a domain %s without Millwright's metadata: it is not Millwright's and is left alone", c.uri, name)
	}
	return &found{dom: dom, meta: meta}, nil
}

// meta reads a domain's Millwright metadata; nil when it has none.
func (c *conn) meta(dom golibvirt.Domain) (*Meta, error) {
	x, err := c.l.DomainGetMetadata(dom, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{MetadataNamespace}, golibvirt.DomainAffectConfig)
	if isCode(err, golibvirt.ErrNoDomainMetadata) {
		return nil, nil
	}
	if err != nil {
		return nil, c.errorf(err, "reading the metadata of domain %s", dom.Name)
	}
	m, err := parseMeta(x)
	if err != nil {
		return nil, driver.Errorf(driver.Internal, "domain %s: %v", dom.Name, err)
	}
	return m, nil
}

func (c *conn) providerID(name string) string {
	return "libvirt://" + c.host + "/" + name
}

// CreateMachine defines and starts the Machine's domain, or starts the one
// that exists. See docs/providers/libvirt.md for what the VM is given.
func (d *Driver) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	cl, err := d.begin(ctx, req.MachineClass, req.Machine)
	if err != nil {
		return nil, err
	}
	s, c, name := cl.spec, cl.conn, cl.name
	defer d.lock(name)()
	f, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	if f == nil {
		if err := c.elsewhere(req.Machine, name); err != nil {
			return nil, err
		}
		if err := d.define(ctx, c, s, req); err != nil {
			return nil, err
		}
		if f, err = c.lookup(name); err != nil {
			return nil, err
		}
		if f == nil {
			return nil, driver.Errorf(driver.Unknown, "domain %s vanished right after it was defined", name)
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := c.start(f.dom); err != nil {
		return nil, err
	}
	if err := c.recordStart(f); err != nil {
		return nil, err
	}
	return &driver.CreateMachineResponse{ProviderID: c.providerID(name), NodeName: f.meta.NodeName,
		LastKnownState: lastKnownState{URI: c.uri}.encode()}, nil
}

// define makes the Machine's volumes and defines its domain. Volumes come
// first: a create interrupted before the domain is defined leaves volumes
// the next create replaces and a deletion removes by name.
func (d *Driver) define(ctx context.Context, c *conn, s *spec, req *driver.CreateMachineRequest) error {
	m := req.Machine
	name := domainName(m)
	if err := d.checkPolicy(s, c.uri); err != nil {
		return err
	}
	if err := d.checkRelay(c.uri, s); err != nil {
		return err
	}
	virtType, err := d.domainType(ctx, c, s)
	if err != nil {
		return err
	}
	if err := c.checkNetwork(s.Network); err != nil {
		return err
	}
	pool, err := c.pool(s.Pool)
	if err != nil {
		return err
	}
	var img *image
	if s.Image != "" {
		if img, err = c.image(pool, s.Image); err != nil {
			return err
		}
		if s.diskBytes != 0 && s.diskBytes < img.capacity {
			return invalid("providerSpec.diskSize", "%s is smaller than the image (%d bytes)", s.DiskSize.String(), img.capacity)
		}
	}
	d.naming.Lock()
	defer d.naming.Unlock()
	nodeName, err := c.nodeName(m)
	if err != nil {
		return err
	}
	meta := &Meta{
		Namespace: m.Namespace, Name: m.Name, UID: string(m.UID),
		ClassNamespace: req.MachineClass.Namespace, ClassName: req.MachineClass.Name,
		NodeName:   nodeName,
		ConsoleLog: ConsoleLog(d.opts.ConsoleDir, name),
		Volumes:    []MetaVolume{{Pool: s.Pool, Name: seedVolume(name)}, {Pool: s.Pool, Name: stateVolume(name)}},
	}
	var userData []byte
	if req.Secret != nil {
		userData = req.Secret.Data["userData"]
	}
	iso, err := Seed{UserData: userData, MetaData: MetaData{
		InstanceID: string(m.UID), LocalHostname: meta.NodeName, ProviderID: c.providerID(name),
	}}.ISO()
	if err != nil {
		return driver.Errorf(driver.Internal, "%v", err)
	}
	if err := c.createSeed(pool, seedVolume(name), iso); err != nil {
		return err
	}
	if err := c.createState(pool, stateVolume(name), stateVolumeSize); err != nil {
		return err
	}
	if img != nil {
		if err := c.createOverlay(pool, diskVolume(name), img, s.diskBytes); err != nil {
			return err
		}
		meta.Volumes = append(meta.Volumes, MetaVolume{Pool: s.Pool, Name: diskVolume(name)})
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	x, err := domainXML(name, virtType, s, meta, s.Image != "", d.relay())
	if err != nil {
		return driver.Errorf(driver.Internal, "domain XML: %v", err)
	}
	if _, err := c.l.DomainDefineXMLFlags(x, golibvirt.DomainDefineValidate); err != nil {
		return c.errorf(err, "defining domain %s", name)
	}
	return nil
}

// domainType resolves the class's domain type: auto by the KVM probe, kvm
// only if the host offers it.
func (d *Driver) domainType(ctx context.Context, c *conn, s *spec) (string, error) {
	switch s.DomainType {
	case DomainTypeQEMU:
		return DomainTypeQEMU, nil
	case DomainTypeAuto:
		return d.autoDomainType(ctx, c, s)
	}
	if _, err := c.l.ConnectGetDomainCapabilities(golibvirt.OptString{}, golibvirt.OptString{"x86_64"}, golibvirt.OptString{}, golibvirt.OptString{DomainTypeKVM}, 0); err != nil {
		return "", invalid("providerSpec.domainType", "kvm is not available on libvirt at %s (%s); use qemu", c.uri, driver.MessageOf(c.errorf(err, "domain capabilities")))
	}
	return DomainTypeKVM, nil
}

// checkRelay checks that the driver can give a class's guest forwards
// their relay: it names a usable relay binary, which, when libvirt is on
// this host, is a file QEMU (libvirt's unprivileged user) may execute.
func (d *Driver) checkRelay(uri string, s *spec) error {
	if s.Network == nil || s.Network.User == nil || len(s.Network.User.GuestForwards) == 0 {
		return nil
	}
	err := CheckRelayBinary(d.opts.RelayBinary)
	if u, perr := url.Parse(uri); err == nil && perr == nil && u.Host == "" {
		fi, serr := os.Stat(d.opts.RelayBinary)
		switch {
		case serr != nil:
			err = serr
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o001 == 0:
			err = fmt.Errorf("%s is not a file every user may execute (QEMU runs it as libvirt's user)", d.opts.RelayBinary)
		}
	}
	if err != nil {
		return driver.Errorf(driver.FailedPrecondition, "providerSpec.network.user.guestForwards: the driver has no relay to run for them (millwright-libvirt --relay-binary): %v", err)
	}
	return nil
}

// checkNetwork checks that a named libvirt network exists.
func (c *conn) checkNetwork(n *NetworkSpec) error {
	if n == nil || n.Name == "" {
		return nil
	}
	_, err := c.l.NetworkLookupByName(n.Name)
	if isCode(err, golibvirt.ErrNoNetwork) {
		return invalid("providerSpec.network.name", "libvirt at %s has no network %q", c.uri, n.Name)
	}
	if err != nil {
		return c.errorf(err, "looking up network %s", n.Name)
	}
	return nil
}

// start starts a domain that is not running.
func (c *conn) start(dom golibvirt.Domain) error {
	active, err := c.l.DomainIsActive(dom)
	if err != nil {
		return c.errorf(err, "domain %s", dom.Name)
	}
	if active == 1 {
		return nil
	}
	if err := c.l.DomainCreate(dom); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
		return c.errorf(err, "starting domain %s", dom.Name)
	}
	return nil
}

// recordStart writes the first start's time into the domain's metadata
// (its persistent definition), once: after the start, so a start that
// failed leaves the domain "never started" and the next create starts it.
func (c *conn) recordStart(f *found) error {
	if f.meta.Started != "" {
		return nil
	}
	meta := *f.meta
	meta.Started = time.Now().UTC().Format(time.RFC3339)
	return c.setMeta(f, &meta, "recording the start of")
}

// setMeta replaces the domain's Millwright metadata in its persistent
// definition, where the next call of any driver instance reads it.
func (c *conn) setMeta(f *found, meta *Meta, what string) error {
	x, err := metaXML(meta)
	if err != nil {
		return driver.Errorf(driver.Internal, "domain %s metadata: %v", f.dom.Name, err)
	}
	if err := c.l.DomainSetMetadata(f.dom, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{x},
		golibvirt.OptString{"millwright"}, golibvirt.OptString{MetadataNamespace}, golibvirt.DomainAffectConfig); err != nil {
		return c.errorf(err, "%s domain %s", what, f.dom.Name)
	}
	f.meta = meta
	return nil
}

// GetMachineStatus reports the Machine's domain: NotFound when there is
// none (or it was defined and never started, which CreateMachine does),
// FailedPrecondition with the console's last lines when it has stopped.
func (d *Driver) GetMachineStatus(ctx context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	cl, err := d.begin(ctx, req.MachineClass, req.Machine)
	if err != nil {
		return nil, err
	}
	c, name := cl.conn, cl.name
	f, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	if f == nil {
		if err := c.elsewhere(req.Machine, name); err != nil {
			return nil, err
		}
		return nil, driver.Errorf(driver.NotFound, "libvirt at %s has no domain %s for Machine %s", c.uri, name, req.Machine.Name)
	}
	state, reason, err := c.l.DomainGetState(f.dom, 0)
	if err != nil {
		return nil, c.errorf(err, "domain %s", name)
	}
	switch golibvirt.DomainState(state) {
	case golibvirt.DomainShutoff:
		if golibvirt.DomainShutoffReason(reason) == golibvirt.DomainShutoffUnknown {
			if f.meta.Started == "" {
				return nil, driver.Errorf(driver.NotFound, "domain %s is defined but has not run since; CreateMachine starts it", name)
			}
			// Started once, so it ran and stopped; libvirt forgot why
			// (libvirtd restarted since).
			return nil, d.stopped(f, "shut off (first started "+f.meta.Started+"; libvirt no longer knows why it stopped)")
		}
		return nil, d.stopped(f, fmt.Sprintf("shut off (%s)", shutoffReason(reason)))
	case golibvirt.DomainCrashed:
		return nil, d.stopped(f, "crashed")
	}
	// A domain made before the driver recorded starts is running, so it
	// has started: record it now, or a stop after a libvirtd restart would
	// read as never started. Best effort: the status is what is asked.
	if f.meta.Started == "" {
		if err := c.recordStart(f); err != nil {
			d.opts.Logger.Warn("could not record that a running domain has started", "domain", name, "err", driver.MessageOf(err))
		}
	}
	// The console's last lines are the Machine's progress: a VM that
	// never joins says there why (the node agent logs to it). A serial
	// console ends its lines with CR LF.
	return &driver.GetMachineStatusResponse{ProviderID: c.providerID(name), NodeName: f.meta.NodeName,
		Progress: strings.ReplaceAll(logtail.Tail(f.meta.ConsoleLog, progressLines), "\r", "")}, nil
}

func (d *Driver) stopped(f *found, how string) error {
	return driver.Errorf(driver.FailedPrecondition, "domain %s has %s; last lines of its console %s:\n%s",
		f.dom.Name, how, f.meta.ConsoleLog, logtail.Tail(f.meta.ConsoleLog, consoleTailLines))
}

func shutoffReason(r int32) string {
	switch golibvirt.DomainShutoffReason(r) {
	case golibvirt.DomainShutoffShutdown:
		return "the guest powered off"
	case golibvirt.DomainShutoffDestroyed:
		return "destroyed"
	case golibvirt.DomainShutoffCrashed:
		return "the guest crashed"
	case golibvirt.DomainShutoffFailed:
		return "QEMU failed to start"
	}
	return fmt.Sprintf("reason %d", r)
}

// ConsoleTail returns the last lines the Machine's VM wrote to its serial
// console.
func (d *Driver) ConsoleTail(m *v1alpha1.Machine, lines int) string {
	return logtail.Tail(ConsoleLog(d.opts.ConsoleDir, domainName(m)), lines)
}

// ListMachines lists the domains made from the class, each with the name
// and UID of its Machine from the domain's metadata, a page at a time
// (driver.PageOf). Domains without Millwright's metadata are not looked
// at.
func (d *Driver) ListMachines(ctx context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	s, err := d.classSpec(req.MachineClass)
	if err != nil {
		return nil, err
	}
	if err := d.checkURI(s.URI); err != nil {
		return nil, err
	}
	c, err := d.conns.get(ctx, s.URI)
	if err != nil {
		return nil, err
	}
	owned, err := c.owned()
	if err != nil {
		return nil, err
	}
	var out []driver.ListedVM
	for name, meta := range owned {
		if meta.ofClass(req.MachineClass) {
			out = append(out, driver.ListedVM{ProviderID: c.providerID(name), MachineName: meta.Name, MachineUID: meta.UID})
		}
	}
	return driver.PageOf(out, req), nil
}

// owned returns the metadata of every domain that carries Millwright's,
// by domain name; domains without it are not Millwright's and left out.
func (c *conn) owned() (map[string]*Meta, error) {
	doms, _, err := c.l.ConnectListAllDomains(1, golibvirt.ConnectListDomainsActive|golibvirt.ConnectListDomainsInactive)
	if err != nil {
		return nil, c.errorf(err, "listing domains")
	}
	out := map[string]*Meta{}
	for _, dom := range doms {
		// A KVM probe (transient, without metadata; maybe another driver
		// instance's, running) is no Machine's.
		if !strings.HasPrefix(dom.Name, domainPrefix) || strings.HasPrefix(dom.Name, probePrefix) {
			continue
		}
		meta, err := c.meta(dom)
		if driver.CodeOf(err) == driver.NotFound {
			continue // deleted meanwhile
		}
		if err != nil {
			return nil, err
		}
		if meta != nil {
			out[dom.Name] = meta
		}
	}
	return out, nil
}

// nodeName is the name the Machine's Node registers with: the Machine's
// name, unless a domain of another Machine (a Machine of the same name in
// another namespace) already has it; then the name gets a suffix from the
// Machine's UID. Node names are cluster-wide, Machine names per namespace.
// The caller holds d.naming, so two creates do not pick one name.
func (c *conn) nodeName(m *v1alpha1.Machine) (string, error) {
	owned, err := c.owned()
	if err != nil {
		return "", err
	}
	for _, meta := range owned {
		if meta.NodeName == m.Name && meta.UID != string(m.UID) {
			return names.Join(m.Name, strings.ReplaceAll(string(m.UID), "-", "")[:5], names.MaxLabelValue), nil
		}
	}
	return m.Name, nil
}

// Ready reports whether the default libvirt daemon answers.
func (d *Driver) Ready(ctx context.Context) error {
	c, err := d.conns.get(ctx, d.opts.DefaultURI)
	if err != nil {
		return err
	}
	if _, err := c.l.ConnectGetLibVersion(); err != nil {
		return c.errorf(err, "libvirt at %s", c.uri)
	}
	return nil
}

// Start watches the default libvirt daemon until ctx ends, logging when it
// becomes unreachable or reachable again; calls made meanwhile answer
// Unavailable. It always returns nil: an unreachable daemon is waited for,
// not a reason to stop.
func (d *Driver) Start(ctx context.Context, every time.Duration) error {
	var last error
	first := true
	for {
		err := d.Ready(ctx)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case err != nil && (first || last == nil):
			d.opts.Logger.Error("libvirt unreachable; retrying", "uri", d.opts.DefaultURI, "every", every, "err", driver.MessageOf(err))
		case err == nil && (first || last != nil):
			d.opts.Logger.Info("connected to libvirt", "uri", d.opts.DefaultURI)
		}
		last, first = err, false
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}
