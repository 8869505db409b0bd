package safety

import (
	"sort"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machine"
)

// orphan is a VM a driver listed that no Machine manages.
type orphan struct {
	ProviderID  string
	MachineName string
	Why         string
}

// judgeVM decides whether the VM providerID, made for the Machine named
// machineName, is an orphan; m is that Machine, nil when there is none.
// A Machine whose create may be in flight protects every VM claiming it
// (see machine.CreateMayBeInFlight; decided from the fields, not from
// status.phase, a summary that may lag behind them).
func judgeVM(providerID, machineName string, m *v1alpha1.Machine) (orphan, bool) {
	o := orphan{ProviderID: providerID, MachineName: machineName}
	switch {
	case m == nil:
		o.Why = "no Machine " + machineName + " exists"
		return o, true
	case machine.CreateMayBeInFlight(m):
		return o, false
	case m.Spec.ProviderID == providerID:
		return o, false
	}
	o.Why = "Machine " + machineName + " has another VM, " + m.Spec.ProviderID
	return o, true
}

// findOrphans judges every listed VM (providerID -> Machine name);
// machine returns the Machine of a name, nil when there is none.
func findOrphans(vms map[string]string, machine func(name string) *v1alpha1.Machine) []orphan {
	var out []orphan
	for pid, name := range vms {
		if o, ok := judgeVM(pid, name, machine(name)); ok {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProviderID < out[j].ProviderID })
	return out
}

// sightings remembers, per class, when each suspected orphan was first
// seen. Only memory: a restart restarts the count, which only delays a
// collection.
type sightings map[string]map[string]time.Time

// advance records this pass's orphans of class and returns those seen on
// the previous pass too (confirmed) and how many are new. A VM not orphaned
// this pass is forgotten: the two sightings must be consecutive.
func (s sightings) advance(class string, found []orphan, now time.Time) (confirmed []orphan, fresh int) {
	prev := s[class]
	next := make(map[string]time.Time, len(found))
	for _, o := range found {
		if at, ok := prev[o.ProviderID]; ok {
			next[o.ProviderID] = at
			confirmed = append(confirmed, o)
			continue
		}
		next[o.ProviderID] = now
		fresh++
	}
	if len(next) == 0 {
		delete(s, class)
	} else {
		s[class] = next
	}
	return confirmed, fresh
}

// forget drops a collected VM.
func (s sightings) forget(class, providerID string) {
	delete(s[class], providerID)
}
