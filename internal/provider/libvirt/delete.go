package libvirt

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/millwright-dev/millwright/internal/logtail"
	"github.com/millwright-dev/millwright/pkg/driver"
)

const (
	// shutdownPoll is how often a deletion looks whether the guest is off.
	shutdownPoll = 200 * time.Millisecond
	// replyMargin is kept from a call's deadline to answer in time.
	replyMargin = time.Second
	// repress is how often a deletion presses the power button again
	// while it waits: a guest drops a press it is not watching for yet
	// (one deleted while it boots) and answers the next one.
	repress = 10 * time.Second
)

// DeleteMachine shuts the Machine's domain down (ACPI, then destroy after
// the class's shutdownGracePeriod), undefines it and deletes its volumes,
// its console log and libvirt's own log of it. It waits for the guest
// only as long as the call's deadline allows: if the grace period
// outlasts it, the call answers Aborted and the next call carries on
// where it stopped.
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
	if f == nil && cl.byProviderID == "" {
		if err := c.elsewhere(req.Machine, name); err != nil {
			return nil, err
		}
	}
	volumes := []MetaVolume{{Pool: s.Pool, Name: seedVolume(name)}, {Pool: s.Pool, Name: stateVolume(name)}, {Pool: s.Pool, Name: diskVolume(name)}}
	console := ConsoleLog(d.opts.ConsoleDir, name)
	if f != nil {
		if err := d.powerOff(ctx, c, f, s.shutdownGrace); err != nil {
			return nil, err
		}
		// The volumes the domain's metadata names, in the pools they were
		// made in: the class's pool may have been edited since.
		volumes = append(f.meta.Volumes, volumes...)
		console = f.meta.ConsoleLog
	}
	// Before the undefinition: the metadata naming each volume's pool
	// stays until every volume is gone, so a deletion interrupted here
	// finds them again. Without a domain (a create interrupted before it
	// defined one) the volumes are deleted by name from the class's pool.
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
	if f != nil {
		err := c.l.DomainUndefineFlags(f.dom, golibvirt.DomainUndefineManagedSave|golibvirt.DomainUndefineSnapshotsMetadata|golibvirt.DomainUndefineNvram)
		if err != nil && !isCode(err, golibvirt.ErrNoDomain) {
			return nil, c.errorf(err, "undefining domain %s", name)
		}
	}
	// The logs are on the libvirt host: removed where the driver runs there.
	for _, log := range []string{console, QEMULog(d.opts.QEMULogDir, name)} {
		if err := os.Remove(log); err != nil && !errors.Is(err, fs.ErrNotExist) {
			d.opts.Logger.Warn("could not remove a deleted VM's log", "path", log, "err", err)
		}
	}
	return &driver.DeleteMachineResponse{}, nil
}

// powerOff stops a running domain: an ACPI shutdown first (the power
// button, which the node agent answers by stopping and powering off), then
// a destroy once grace has passed since the first deletion call asked for
// it. That time is kept in the domain's metadata, so the grace period is
// counted once across calls, driver restarts and driver instances; a call
// whose deadline comes first answers Aborted (retried). The button is
// pressed before the time is recorded: a driver stopped in between presses
// it again on the next call, which a guest shutting down ignores. While it
// waits it presses again every repress (nextPress), for a guest that was
// not watching the button at the first press.
func (d *Driver) powerOff(ctx context.Context, c *conn, f *found, grace time.Duration) error {
	dom := f.dom
	active, err := c.l.DomainIsActive(dom)
	if err != nil {
		return c.errorf(err, "domain %s", dom.Name)
	}
	if active == 0 {
		return nil
	}
	if grace > 0 {
		asked, err := d.askShutdown(c, f, grace)
		if err != nil {
			return err
		}
		deadline := asked.Add(grace)
		next, repeated := nextPress(asked, time.Now()), 0
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
				attrs := []any{"domain", dom.Name, "seconds", time.Since(asked).Round(time.Millisecond).Seconds()}
				if repeated > 0 {
					// Why the guest missed a press is in its console, which
					// the deletion removes.
					attrs = append(attrs, "pressesRepeated", repeated, "console", f.meta.ConsoleLog, "consoleTail", consoleTail(f))
				}
				d.opts.Logger.Info("the guest shut down after the ACPI shutdown", attrs...)
				return nil
			}
			if now := time.Now(); !now.Before(next) && now.Before(deadline) {
				d.pressPowerButton(c, dom)
				repeated++
				d.opts.Logger.Info("pressed the ACPI power button again", "domain", dom.Name,
					"seconds", now.Sub(asked).Round(time.Millisecond).Seconds())
				next = nextPress(asked, now)
			}
		}
		// What the guest did last is lost with its console log, which the
		// deletion removes: a guest that ignored the power button says why
		// here (docs/providers/libvirt.md, Deletion).
		d.opts.Logger.Info("the guest did not shut down within the grace period: destroying it", "domain", dom.Name, "grace", grace,
			"console", f.meta.ConsoleLog, "consoleTail", consoleTail(f))
	}
	if err := c.l.DomainDestroyFlags(dom, golibvirt.DomainDestroyDefault); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
		return c.errorf(err, "destroying domain %s", dom.Name)
	}
	return nil
}

// askShutdown returns when the guest was first asked to shut down,
// pressing its ACPI power button and recording the time in the domain's
// metadata if no deletion did before.
func (d *Driver) askShutdown(c *conn, f *found, grace time.Duration) (time.Time, error) {
	if f.meta.ShutdownRequested != "" {
		asked, err := time.Parse(time.RFC3339Nano, f.meta.ShutdownRequested)
		if err == nil {
			return asked, nil
		}
		d.opts.Logger.Warn("unreadable shutdown time in a domain's metadata; asking again", "domain", f.dom.Name, "value", f.meta.ShutdownRequested)
	}
	d.pressPowerButton(c, f.dom)
	asked := time.Now()
	meta := *f.meta
	meta.ShutdownRequested = asked.UTC().Format(time.RFC3339Nano)
	if err := c.setMeta(f, &meta, "recording the shutdown request of"); err != nil {
		return time.Time{}, err
	}
	d.opts.Logger.Info("asked the guest to shut down (ACPI power button)", "domain", f.dom.Name, "grace", grace)
	return asked, nil
}

// pressPowerButton asks the guest to shut down through its ACPI power
// button. A guest without ACPI support ignores it; the destroy follows.
func (d *Driver) pressPowerButton(c *conn, dom golibvirt.Domain) {
	if err := c.l.DomainShutdownFlags(dom, golibvirt.DomainShutdownAcpiPowerBtn); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
		d.opts.Logger.Warn("ACPI shutdown failed; the domain is destroyed after the grace period", "domain", dom.Name, "err", err)
	}
}

// nextPress is when a deletion that first pressed the power button at
// asked presses it again after now: every repress from asked. It derives
// from the time in the domain's metadata alone, so a driver that restarts
// keeps both the schedule and the grace period's end.
func nextPress(asked, now time.Time) time.Time {
	if now.Before(asked) {
		return asked.Add(repress)
	}
	return asked.Add((now.Sub(asked)/repress + 1) * repress)
}

// consoleTail is the last lines of the domain's console, without the
// serial console's CRs.
func consoleTail(f *found) string {
	return strings.ReplaceAll(logtail.Tail(f.meta.ConsoleLog, deletedConsoleLines), "\r", "")
}
