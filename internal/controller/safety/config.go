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
	// SafetyUp is how many Machines above replicas + maxSurge freeze a
	// MachineSet or MachineDeployment.
	SafetyUp int32
	// SafetyDown is how far below the freezing count the Machines must fall
	// for the freeze to lift by itself.
	SafetyDown int32
	// OvershootingPeriod is the time between two overshoot checks of one
	// MachineSet or MachineDeployment (each Machine creation checks too).
	OvershootingPeriod time.Duration
	// StaleNodeAfter is how old a Node no Machine owns must be to be
	// reported: a Machine's creation timeout, since a Node may register
	// before its Machine records the VM.
	StaleNodeAfter time.Duration
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
		SafetyUp:              2,
		SafetyDown:            1,
		OvershootingPeriod:    time.Minute,
		StaleNodeAfter:        20 * time.Minute,
		DriverCallTimeout:     time.Minute,
		BackoffBase:           5 * time.Second,
		BackoffCap:            5 * time.Minute,
	}
}
