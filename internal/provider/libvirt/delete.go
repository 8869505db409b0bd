package libvirt

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/millwright-dev/millwright/pkg/driver"
)

const (
	// shutdownPoll is how often a deletion looks whether the guest is off.
	shutdownPoll = 200 * time.Millisecond
	// replyMargin is kept from a call's deadline to answer in time.
	replyMargin = time.Second
)

// DeleteMachine shuts the Machine's domain down (ACPI, then destroy after
// the class's shutdownGracePeriod), undefines it and deletes its volumes
// and console log. It waits for the guest only as long as the call's
// deadline allows: if the grace period outlasts it, the call answers
// Aborted and the next call carries on where it stopped.
func (d *Driver) DeleteMachine(ctx context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	cl, err := d.beginDelete(ctx, req.MachineClass, req.Machine)
	if err != nil {
		return nil, err
	}
	s, c, name := cl.spec, cl.conn, cl.name
	defer d.lock(name)()
	f, err := c.lookup(name)
	if err != nil {
		return nil, err
	}
	if f != nil && cl.byProviderID != "" && (f.meta.Name != cl.byProviderID || f.meta.Namespace != req.MachineClass.Namespace) {
		return nil, driver.Errorf(driver.FailedPrecondition, "domain %s was made for Machine %s/%s, not %s/%s: left alone",
			name, f.meta.Namespace, f.meta.Name, req.MachineClass.Namespace, cl.byProviderID)
	}
	volumes := []MetaVolume{{Pool: s.Pool, Name: seedVolume(name)}, {Pool: s.Pool, Name: stateVolume(name)}, {Pool: s.Pool, Name: diskVolume(name)}}
	console := ConsoleLog(d.opts.ConsoleDir, name)
	if f != nil {
		if err := d.powerOff(ctx, c, f.dom, s.shutdownGrace); err != nil {
			return nil, err
		}
		err := c.l.DomainUndefineFlags(f.dom, golibvirt.DomainUndefineManagedSave|golibvirt.DomainUndefineSnapshotsMetadata|golibvirt.DomainUndefineNvram)
		if err != nil && !isCode(err, golibvirt.ErrNoDomain) {
			return nil, c.errorf(err, "undefining domain %s", name)
		}
		d.mu.Lock()
		delete(d.shutdowns, name)
		d.mu.Unlock()
		volumes = append(f.meta.Volumes, volumes...)
		console = f.meta.ConsoleLog
	}
	// After the undefinition: a deletion interrupted here finds no domain
	// next time and deletes the volumes by name.
	for _, v := range volumes {
		pool, err := c.l.StoragePoolLookupByName(v.Pool)
		if isCode(err, golibvirt.ErrNoStoragePool) {
			continue
		}
		if err != nil {
			return nil, c.errorf(err, "looking up storage pool %s", v.Pool)
		}
		if err := c.deleteVolume(pool, v.Name); err != nil {
			return nil, err
		}
	}
	if err := os.Remove(console); err != nil && !errors.Is(err, fs.ErrNotExist) {
		d.opts.Logger.Warn("could not remove a deleted VM's console log", "path", console, "err", err)
	}
	return &driver.DeleteMachineResponse{}, nil
}

// powerOff stops a running domain: an ACPI shutdown first, destroyed once
// grace has passed since the first deletion call asked for it.
func (d *Driver) powerOff(ctx context.Context, c *conn, dom golibvirt.Domain, grace time.Duration) error {
	active, err := c.l.DomainIsActive(dom)
	if err != nil {
		return c.errorf(err, "domain %s", dom.Name)
	}
	if active == 0 {
		return nil
	}
	d.mu.Lock()
	asked, ok := d.shutdowns[dom.Name]
	if !ok {
		asked = time.Now()
		d.shutdowns[dom.Name] = asked
	}
	d.mu.Unlock()
	if grace > 0 && !ok {
		// A guest without ACPI support ignores it; the destroy follows.
		if err := c.l.DomainShutdownFlags(dom, golibvirt.DomainShutdownAcpiPowerBtn); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
			d.opts.Logger.Warn("ACPI shutdown failed; the domain is destroyed after the grace period", "domain", dom.Name, "err", err)
		}
	}
	deadline := asked.Add(grace)
	for time.Now().Before(deadline) {
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < replyMargin+shutdownPoll {
			return driver.Errorf(driver.Aborted, "domain %s is shutting down (grace period until %s); the deletion goes on at the next call", dom.Name, deadline.Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(shutdownPoll):
		}
		if active, err = c.l.DomainIsActive(dom); err != nil {
			return c.errorf(err, "domain %s", dom.Name)
		}
		if active == 0 {
			return nil
		}
	}
	if err := c.l.DomainDestroyFlags(dom, golibvirt.DomainDestroyDefault); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
		return c.errorf(err, "destroying domain %s", dom.Name)
	}
	return nil
}
