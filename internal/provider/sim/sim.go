package sim

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/pkg/driver"
)

// DefaultName is the driver's name, as MachineClass spec.provider names it.
const DefaultName = "sim"

// Version is the sim driver's version, reported by GetPluginInfo.
const Version = "v0.1.0"

// NodeMode says how the sim makes the Nodes of its VMs look alive.
type NodeMode string

// The node modes.
const (
	// NodeModeBuiltin: the sim sets and keeps the Node's Ready condition
	// itself. For envtest, where no kwok runs.
	NodeModeBuiltin NodeMode = "builtin"
	// NodeModeKwok: the Node is marked for kwok, which keeps it Ready,
	// renews its Lease and runs its pods; the sim never writes conditions.
	NodeModeKwok NodeMode = "kwok"
)

// Options configure a Sim. The zero value works: builtin nodes, no
// cluster, state in memory only.
type Options struct {
	// Name the driver reports (default "sim").
	Name string
	// Client reaches the target cluster, where VMs register their Nodes.
	// Nil: VMs never register Nodes (pure driver tests).
	Client client.Client
	// NodeReader, when set, is where Nodes are read instead of Client:
	// an informer's cache, so that looking at a Node, and every resync,
	// costs the API server nothing. A cache lags the API server by a
	// watch event; the sim asks Client before it trusts a NotFound that
	// would leave a Node gone, and looks again when a create finds the
	// Node there. A Node registered within that lag before its VM is
	// deleted may stay Ready (the machine controller deletes it anyway).
	NodeReader client.Reader
	// NodeMode is builtin (default) or kwok.
	NodeMode NodeMode
	// NodeWorkers register and update Nodes concurrently (default 8).
	NodeWorkers int
	// NodeRetries bounds the retries of one failing Node write (default 10);
	// the next resync tries again.
	NodeRetries int
	// NodeResync is how often every live VM's Node is checked again and
	// put back in shape (default 5m; negative: never).
	NodeResync time.Duration
	// Clock drives latencies, boot delays and timers (default: real time).
	Clock clock.WithTicker
	// SnapshotPath, when set, is a JSON file the cloud is loaded from on
	// New and saved to when it changes, so the sim itself can restart.
	SnapshotPath string
	// SnapshotInterval is the least time between two saves (default 1s).
	SnapshotInterval time.Duration
	// Logger receives one line per Node action and error (default: discard).
	Logger *slog.Logger
}

// Sim is the simulated cloud provider. It implements driver.Driver, with
// every optional method; Start runs its Node registration and snapshots.
type Sim struct {
	name  string
	clock clock.WithTicker
	log   *slog.Logger
	cloud *Cloud
	nodes *registrar
	snap  *snapshotter
	admin http.Handler
	// calls counts the creates and deletes in flight per class.
	calls *callCounter

	// waiting counts calls waiting out an injected latency; tests step a
	// fake clock once the call they drive is waiting.
	waiting   atomic.Int32
	startOnce sync.Once
}

var _ driver.Driver = (*Sim)(nil)

// New makes a Sim. With a SnapshotPath whose file exists, the cloud is
// loaded from it; a file that cannot be read is an error, never silently
// an empty cloud.
func New(opts Options) (*Sim, error) {
	if opts.Name == "" {
		opts.Name = DefaultName
	}
	switch opts.NodeMode {
	case "":
		opts.NodeMode = NodeModeBuiltin
	case NodeModeBuiltin, NodeModeKwok:
	default:
		return nil, fmt.Errorf("sim: unknown node mode %q: use %q or %q", opts.NodeMode, NodeModeBuiltin, NodeModeKwok)
	}
	if opts.NodeWorkers <= 0 {
		opts.NodeWorkers = 8
	}
	if opts.NodeRetries <= 0 {
		opts.NodeRetries = 10
	}
	if opts.NodeResync == 0 {
		opts.NodeResync = 5 * time.Minute
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.SnapshotInterval <= 0 {
		opts.SnapshotInterval = time.Second
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Sim{name: opts.Name, clock: opts.Clock, log: opts.Logger}
	s.cloud = newCloud(opts.Clock)
	if opts.SnapshotPath != "" {
		s.snap = newSnapshotter(opts.SnapshotPath, opts.SnapshotInterval, opts.Clock, s.cloud, opts.Logger)
		if err := s.snap.load(); err != nil {
			return nil, err
		}
		s.cloud.dirty = s.snap.markDirty
	}
	s.nodes = newRegistrar(opts, s.cloud)
	s.cloud.changed = s.nodes.enqueue
	s.calls = &callCounter{}
	s.admin = newAdmin(s.cloud, s.calls)
	return s, nil
}

// Cloud returns the sim's state, for tests and the admin endpoint.
func (s *Sim) Cloud() *Cloud { return s.cloud }

// AdminHandler returns the admin HTTP API (see the package documentation).
func (s *Sim) AdminHandler() http.Handler { return s.admin }

// Start registers Nodes and saves snapshots until ctx ends, then saves a
// last snapshot. It blocks, like a controller-runtime Runnable. Driver
// calls work without it; their Node work waits in a queue until it runs.
func (s *Sim) Start(ctx context.Context) error {
	started := false
	s.startOnce.Do(func() { started = true })
	if !started {
		return errors.New("sim: Start called twice")
	}
	var wg sync.WaitGroup
	if s.snap != nil {
		wg.Go(func() { s.snap.run(ctx) })
	}
	s.nodes.run(ctx)
	wg.Wait()
	if s.snap != nil {
		return s.snap.save()
	}
	return nil
}

// persist makes a create's or delete's change durable before the call
// answers (without SnapshotPath it does nothing). A failed save is
// Unavailable: the caller retries, and the retry saves again.
func (s *Sim) persist() error {
	if s.snap == nil {
		return nil
	}
	if err := s.snap.durable(); err != nil {
		s.log.Error("saving snapshot", "error", err)
		return driver.Errorf(driver.Unavailable, "the change is made but not saved: %v", err)
	}
	return nil
}

// Save writes the snapshot now (without SnapshotPath it does nothing).
func (s *Sim) Save() error {
	if s.snap == nil {
		return nil
	}
	return s.snap.save()
}
