package manager

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/internal/provider/sim"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// drivers are the connected drivers by name, with what must be started
// (in-process sims) and closed (gRPC connections) alongside the manager.
type drivers struct {
	byName  map[string]driver.Driver
	sims    []*sim.Sim
	clients []*driver.Client
}

// Close closes the gRPC connections.
func (d *drivers) Close() {
	for _, c := range d.clients {
		_ = c.Close()
	}
}

// connectDrivers dials every --driver (or builds the in-process sim, whose
// Nodes are written through target) and waits, up to
// --driver-startup-timeout in all, for each to answer GetPluginInfo. A
// driver that never answers fails the start: a manager that cannot reach
// a driver would fail every Machine of its classes, better to say so once.
func (o *Options) connectDrivers(ctx context.Context, log logr.Logger, target client.Client) (*drivers, error) {
	ds := &drivers{byName: map[string]driver.Driver{}}
	for _, spec := range o.Drivers {
		if spec.Endpoint == InProcessSim {
			s, err := sim.New(sim.Options{
				Name: spec.Name, Client: target, NodeMode: sim.NodeModeBuiltin,
				Logger: slog.New(logr.ToSlogHandler(log.WithName("sim"))),
			})
			if err != nil {
				ds.Close()
				return nil, fmt.Errorf("driver %q: %w", spec.Name, err)
			}
			ds.byName[spec.Name], ds.sims = s, append(ds.sims, s)
			continue
		}
		// The controller bounds each call by --driver-call-timeout; the
		// client's own bound (a minute by default) must not cut it shorter.
		opts := []driver.DialOption{driver.WithCallTimeout(o.Machine.DriverCallTimeout)}
		if !strings.HasPrefix(spec.Endpoint, "unix://") {
			// Over the network the driver and the manager prove who they
			// are (docs/security.md); a unix socket's permissions do that.
			opts = append(opts, driver.WithTLS(o.DriverTLS))
			if o.DriverTLS.IsZero() {
				log.Info("dialling a driver over TCP without --driver-tls-*: the connection is neither authenticated nor encrypted (docs/security.md)", "driver", spec.Name, "endpoint", spec.Endpoint)
			}
		}
		c, err := driver.Dial(spec.Endpoint, opts...)
		if err != nil {
			ds.Close()
			return nil, fmt.Errorf("driver %q: %w", spec.Name, err)
		}
		ds.byName[spec.Name], ds.clients = c, append(ds.clients, c)
	}

	ctx, cancel := context.WithTimeout(ctx, o.DriverStartupTimeout)
	defer cancel()
	for _, spec := range o.Drivers {
		info, err := waitForDriver(ctx, log, spec, ds.byName[spec.Name], o.DriverStartupTimeout)
		if err != nil {
			ds.Close()
			return nil, err
		}
		log.Info("driver connected", "driver", spec.Name, "endpoint", spec.Endpoint,
			"mutualTLS", !strings.HasPrefix(spec.Endpoint, "unix://") && !o.DriverTLS.IsZero(),
			"pluginName", info.Name, "version", info.Version, "implements", info.Implements)
		if info.Name != spec.Name {
			// Classes select the driver by the flag's name; a different
			// name reported by the plugin usually means a wrong socket.
			log.Info("driver reports another name than its --driver flag; MachineClasses select it by the flag's name",
				"driver", spec.Name, "pluginName", info.Name)
		}
	}
	if len(o.Drivers) == 0 {
		log.Info("no --driver given: only Machines with spec.infrastructureRef can be provisioned")
	}
	return ds, nil
}

// waitForDriver calls GetPluginInfo until it answers or ctx ends (after
// timeout, for all drivers together), then explains the last failure in
// terms of the flags.
func waitForDriver(ctx context.Context, log logr.Logger, spec DriverSpec, d driver.Driver, timeout time.Duration) (*driver.GetPluginInfoResponse, error) {
	var info *driver.GetPluginInfoResponse
	var last error
	logged := false
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		info, last = d.GetPluginInfo(ctx, &driver.GetPluginInfoRequest{})
		if last != nil && !logged {
			log.Info("waiting for driver", "driver", spec.Name, "endpoint", spec.Endpoint, "error", last.Error())
			logged = true
		}
		return last == nil, nil
	})
	if last == nil && info != nil {
		return info, nil
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return nil, fmt.Errorf("stopped while waiting for driver %q at %s", spec.Name, spec.Endpoint)
	}
	if path, ok := strings.CutPrefix(spec.Endpoint, "unix://"); ok {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("driver %q: socket %s does not exist (waited --driver-startup-timeout %s): start the driver first, or fix --driver %s",
				spec.Name, path, timeout, spec)
		}
	}
	if last == nil {
		last = ctx.Err()
	}
	return nil, fmt.Errorf("driver %q at %s did not answer GetPluginInfo within --driver-startup-timeout %s: %v",
		spec.Name, spec.Endpoint, timeout, last)
}
