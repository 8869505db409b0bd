package machine

import (
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
)

// Config holds the manager-wide lifecycle defaults (the manager's flags).
// A Machine's spec.lifecycle overrides the first six and PreserveTimeout.
type Config struct {
	// CreationTimeout bounds creation → Running; then the Machine is Failed.
	CreationTimeout time.Duration
	// HealthTimeout bounds how long a Machine may stay Unknown before it is Failed.
	HealthTimeout time.Duration
	// DrainTimeout bounds a graceful drain; then the drain is forced.
	DrainTimeout time.Duration
	// MaxEvictRetries is how many eviction rounds a disruption budget may refuse.
	MaxEvictRetries int32
	// NodeConditions make a Machine unhealthy while True.
	NodeConditions []string
	// NodeDeletionTimeout bounds the retries of the Node's deletion once
	// the VM is gone; then the Machine goes without it. 0: retry forever.
	NodeDeletionTimeout time.Duration

	// MaxConcurrentReplacements is how many Machines of one MachineDeployment
	// (or MachineSet) may be Failed and awaiting replacement at once.
	MaxConcurrentReplacements int32
	// BackoffBase and BackoffCap bound the exponential backoff of retryable driver errors.
	BackoffBase, BackoffCap time.Duration
	// LongBackoffBase and LongBackoffCap bound the backoff for exhausted quota or capacity.
	LongBackoffBase, LongBackoffCap time.Duration
	// DriverCallTimeout bounds one driver call.
	DriverCallTimeout time.Duration
	// MaxConcurrentCreates bounds the CreateMachine calls in flight at once.
	// They run outside the reconcile workers, which they would otherwise
	// hold for as long as the provider takes to make a VM.
	MaxConcurrentCreates int
	// EvictionRetryInterval is the time between two eviction rounds a
	// disruption budget refused: MaxEvictRetries rounds take
	// MaxEvictRetries × this before pods are deleted.
	EvictionRetryInterval time.Duration
	// VolumeDetachTimeout bounds the wait for an evicted pod's volumes to detach.
	VolumeDetachTimeout time.Duration
	// UnreachableForceDrainAfter forces the drain of a Node that has not been Ready this long.
	UnreachableForceDrainAfter time.Duration
	// PreserveTimeout bounds how long a Machine is preserved (docs/preservation.md).
	PreserveTimeout time.Duration
	// HealthResync re-checks Running Machines this often even without events.
	HealthResync time.Duration
}

// DefaultConfig returns the defaults of the manager's flags.
func DefaultConfig() Config {
	return Config{
		CreationTimeout:            20 * time.Minute,
		HealthTimeout:              10 * time.Minute,
		DrainTimeout:               2 * time.Hour,
		MaxEvictRetries:            10,
		NodeConditions:             []string{"KernelDeadlock", "ReadonlyFilesystem", "DiskPressure", "NetworkUnavailable"},
		NodeDeletionTimeout:        10 * time.Minute,
		MaxConcurrentReplacements:  1,
		BackoffBase:                5 * time.Second,
		BackoffCap:                 5 * time.Minute,
		LongBackoffBase:            1 * time.Minute,
		LongBackoffCap:             30 * time.Minute,
		DriverCallTimeout:          5 * time.Minute,
		MaxConcurrentCreates:       100,
		EvictionRetryInterval:      drain.DefaultRetryInterval,
		VolumeDetachTimeout:        2 * time.Minute,
		UnreachableForceDrainAfter: 5 * time.Minute,
		HealthResync:               10 * time.Minute,
		PreserveTimeout:            72 * time.Hour,
	}
}

// lifecycle is the effective lifecycle of one Machine: its overrides over the defaults.
type lifecycle struct {
	creationTimeout, healthTimeout, drainTimeout time.Duration
	preserveTimeout, nodeDeletionTimeout         time.Duration
	maxEvictRetries                              int32
	nodeConditions                               []string
}

func (c Config) lifecycleOf(m *v1alpha1.Machine) lifecycle {
	l := lifecycle{
		creationTimeout:     c.CreationTimeout,
		healthTimeout:       c.HealthTimeout,
		drainTimeout:        c.DrainTimeout,
		maxEvictRetries:     c.MaxEvictRetries,
		nodeConditions:      c.NodeConditions,
		preserveTimeout:     c.PreserveTimeout,
		nodeDeletionTimeout: c.NodeDeletionTimeout,
	}
	o := m.Spec.Lifecycle
	if o.CreationTimeout != nil {
		l.creationTimeout = o.CreationTimeout.Duration
	}
	if o.HealthTimeout != nil {
		l.healthTimeout = o.HealthTimeout.Duration
	}
	if o.DrainTimeout != nil {
		l.drainTimeout = o.DrainTimeout.Duration
	}
	if o.MaxEvictRetries != nil {
		l.maxEvictRetries = *o.MaxEvictRetries
	}
	if o.PreserveTimeout != nil {
		l.preserveTimeout = o.PreserveTimeout.Duration
	}
	if o.NodeConditions != nil {
		l.nodeConditions = o.NodeConditions
	}
	if o.NodeDeletionTimeout != nil {
		l.nodeDeletionTimeout = o.NodeDeletionTimeout.Duration
	}
	return l
}
