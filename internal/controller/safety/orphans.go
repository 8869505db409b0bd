package safety

import (
	"slices"
	"sort"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// orphan is a listed VM suspected of belonging to no Machine.
type orphan struct {
	driver.ListedVM
	Why string
	// askDriver: the VM's Machine lives and records another providerID.
	// Only the driver can tell whether that is another VM or this one
	// under another name (a renamed host), so the VM is collected only
	// once GetMachineStatus names another VM as the Machine's.
	askDriver bool
}

// namespaceMachines indexes the live Machines of one namespace.
type namespaceMachines struct {
	byUID        map[types.UID]*v1alpha1.Machine
	byName       map[string]*v1alpha1.Machine
	byProviderID map[string]bool
}

func indexMachines(ms []*v1alpha1.Machine) namespaceMachines {
	ix := namespaceMachines{
		byUID:        make(map[types.UID]*v1alpha1.Machine, len(ms)),
		byName:       make(map[string]*v1alpha1.Machine, len(ms)),
		byProviderID: make(map[string]bool, len(ms)),
	}
	for _, m := range ms {
		ix.byUID[m.UID] = m
		ix.byName[m.Name] = m
		if m.Spec.ProviderID != "" {
			ix.byProviderID[m.Spec.ProviderID] = true
		}
	}
	return ix
}

// judge judges a listed VM against the namespace's Machines.
func (ix namespaceMachines) judge(vm driver.ListedVM) (orphan, bool) {
	return judgeVM(vm, claimant(vm, ix.byUID[types.UID(vm.MachineUID)], ix.byName[vm.MachineName]), ix.byProviderID[vm.ProviderID])
}

// claimant is the live Machine a listed VM was made for: known by its UID
// when the driver reports one (a Machine of the same name and another UID
// is another Machine), else by its name. byUID and byName are the Machines
// of the VM's UID and of its name, nil when there are none.
func claimant(vm driver.ListedVM, byUID, byName *v1alpha1.Machine) *v1alpha1.Machine {
	if vm.MachineUID != "" {
		return byUID
	}
	return byName
}

// judgeVM decides whether a listed VM is a suspected orphan. m is the live
// Machine it was made for (nil when there is none); recorded says whether
// a live Machine records the VM's providerID as its own. A Machine whose
// create may be in flight protects every VM claiming it (see
// machinefacts.CreateMayBeInFlight; decided from the fields, not from
// status.phase, a summary that may lag behind them). The form of a
// providerID never makes a VM an orphan: a VM whose Machine records
// another providerID is only suspected, and the driver must confirm
// (askDriver).
func judgeVM(vm driver.ListedVM, m *v1alpha1.Machine, recorded bool) (orphan, bool) {
	o := orphan{ListedVM: vm}
	switch {
	case recorded:
		return o, false
	case m == nil && vm.MachineUID != "":
		o.Why = "no Machine with UID " + vm.MachineUID + " (" + vm.MachineName + ") exists"
		return o, true
	case m == nil:
		o.Why = "no Machine " + vm.MachineName + " exists"
		return o, true
	case machinefacts.CreateMayBeInFlight(m):
		return o, false
	}
	o.Why = "Machine " + vm.MachineName + " has another VM, " + m.Spec.ProviderID
	o.askDriver = true
	return o, true
}

// findOrphans judges every listed VM, and returns the suspects in
// providerID order, each once (a driver's pages may list a VM twice).
func findOrphans(vms []driver.ListedVM, ix namespaceMachines) []orphan {
	var out []orphan
	for _, vm := range vms {
		if o, ok := ix.judge(vm); ok {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ProviderID < out[j].ProviderID })
	return slices.CompactFunc(out, func(a, b orphan) bool { return a.ProviderID == b.ProviderID })
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
