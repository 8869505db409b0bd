package machine

import (
	"context"

	dto "github.com/prometheus/client_model/go"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
)

// ReplacementAllowed is the meltdown check at the reconciler's clock, for
// the package's envtests.
func (r *Reconciler) ReplacementAllowed(ctx context.Context, m *v1alpha1.Machine) (bool, string, error) {
	return r.replacementAllowed(ctx, m, r.now())
}

// LedgerTTL is how long a replacement decision waits to show in the cache.
const LedgerTTL = ledgerTTL

// StartCreates gives a Reconciler built by a test (not set up with a
// manager) its creates, for direct Reconcile calls.
func (r *Reconciler) StartCreates() {
	r.creates = newCreates(1)
	if r.Limits == nil {
		r.Limits = classlimit.New()
	}
}

// CreateStarted reports whether a CreateMachine call was started for the
// Machine (running, waiting for a slot, or done).
func (r *Reconciler) CreateStarted(uid types.UID) bool { return r.creates.known(uid) }

// OnPhaseChange sets what every phase change calls.
func OnPhaseChange(f func(from, to v1alpha1.MachinePhase)) { phaseChangeHook = f }

// JSONEqual compares two JSON documents by meaning, as the hot update does.
func JSONEqual(a, b string) bool { return jsonEqual(a, b) }

// InPlaceUpdates is how many in-place updates ended with result, by
// millwright_machine_inplace_update_duration_seconds.
func InPlaceUpdates(result v1alpha1.InPlaceUpdatePhase) uint64 {
	var out dto.Metric
	if err := inPlaceSeconds.WithLabelValues(string(result)).(interface{ Write(*dto.Metric) error }).Write(&out); err != nil {
		return 0
	}
	return out.GetHistogram().GetSampleCount()
}
