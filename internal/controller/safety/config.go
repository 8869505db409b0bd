package safety

import "time"

// Config holds the safety controller's settings.
type Config struct {
	// OrphanVMsPeriod is the time between two orphan VM collection passes.
	OrphanVMsPeriod time.Duration
	// OrphanConfirmAfter is how soon a pass that saw new suspected orphans
	// is followed by the confirming pass (capped by OrphanVMsPeriod): a VM
	// must look orphaned on two consecutive passes to be deleted.
	OrphanConfirmAfter time.Duration
	// APIServerCheckPeriod is the time between two probes of the API servers.
	APIServerCheckPeriod time.Duration
	// APIServerCheckTimeout bounds one probe.
	APIServerCheckTimeout time.Duration
	// DriverCallTimeout bounds one driver call.
	DriverCallTimeout time.Duration
	// BackoffBase and BackoffCap bound the retries of failed driver calls.
	BackoffBase, BackoffCap time.Duration
	// Namespace, when set, is the only namespace the manager manages:
	// classes and Machines elsewhere are not looked at, nor Nodes of
	// Machines elsewhere.
	Namespace string
}

// DefaultConfig returns the defaults of the safety flags.
func DefaultConfig() Config {
	return Config{
		OrphanVMsPeriod:       15 * time.Minute,
		OrphanConfirmAfter:    time.Minute,
		APIServerCheckPeriod:  time.Minute,
		APIServerCheckTimeout: 30 * time.Second,
		DriverCallTimeout:     time.Minute,
		BackoffBase:           5 * time.Second,
		BackoffCap:            5 * time.Minute,
	}
}
