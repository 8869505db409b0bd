package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/clock"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// Cloud is the sim's state: every VM, the history of all VMs ever created,
// the fault counters and the outage switch. One mutex guards it; every
// lookup a driver call makes is a map access, so it scales to many
// thousands of VMs.
type Cloud struct {
	clock clock.PassiveClock

	mu        sync.RWMutex
	vms       map[string]*VM
	byMachine map[string][]string            // machine key -> VM IDs, oldest first
	byNode    map[string]string              // node name -> VM ID
	byClass   map[string]map[string]struct{} // class key -> VM IDs
	zoneLoad  map[string]map[string]int      // class key -> zone -> VMs
	ips       map[uint32]string              // allocated InternalIPs -> VM ID
	history   []HistoryEntry
	historyAt map[string]int // VM ID -> index in history
	counters  map[string]int
	classes   map[string]ClassRecord
	outage    bool
	orphanSeq int
	// fullZones are the zones the admin API made out of capacity: a
	// create placed there fails with ResourceExhausted, whatever the class.
	fullZones map[string]bool
	// events are the announced events ReceiveEvents answers (events.go).
	events eventQueue

	// changed is told the node names whose Node must be reconciled; dirty
	// that the state changed and should be saved. Both are called without
	// mu held and must not block.
	changed func(nodeName string, after time.Duration)
	dirty   func()
}

// ClassRecord is the last providerSpec and nodeTemplate a MachineClass was
// seen with, so the admin endpoint can make orphan VMs "of" that class.
type ClassRecord struct {
	ProviderSpec json.RawMessage        `json:"providerSpec"`
	NodeTemplate *v1alpha1.NodeTemplate `json:"nodeTemplate,omitempty"`
}

func newCloud(clk clock.PassiveClock) *Cloud {
	return &Cloud{
		clock:     clk,
		vms:       map[string]*VM{},
		byMachine: map[string][]string{},
		byNode:    map[string]string{},
		byClass:   map[string]map[string]struct{}{},
		zoneLoad:  map[string]map[string]int{},
		ips:       map[uint32]string{},
		historyAt: map[string]int{},
		counters:  map[string]int{},
		classes:   map[string]ClassRecord{},
		fullZones: map[string]bool{},
		changed:   func(string, time.Duration) {},
		dirty:     func() {},
	}
}

func machineKey(namespace, name string) string { return namespace + "/" + name }

// VMs returns every VM in creation order.
func (c *Cloud) VMs() []VM {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]VM, 0, len(c.vms))
	for _, vm := range c.vms {
		out = append(out, vm.clone())
	}
	c.sortVMsLocked(out)
	return out
}

// VM returns the VM with the given ID.
func (c *Cloud) VM(id string) (VM, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	vm, ok := c.vms[id]
	if !ok {
		return VM{}, false
	}
	return vm.clone(), true
}

// MachineVMs returns the VMs that claim the Machine namespace/name, oldest first.
func (c *Cloud) MachineVMs(namespace, name string) []VM {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var out []VM
	for _, id := range c.byMachine[machineKey(namespace, name)] {
		out = append(out, c.vms[id].clone())
	}
	return out
}

// History returns every VM ever created, in creation order.
func (c *Cloud) History() []HistoryEntry {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]HistoryEntry, len(c.history))
	for i := range c.history {
		out[i] = c.history[i].clone()
	}
	return out
}

// Outage reports whether the outage switch is on.
func (c *Cloud) Outage() bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.outage
}

// OutOfCapacityZones are the zones the admin API made out of capacity,
// sorted.
func (c *Cloud) OutOfCapacityZones() []string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]string, 0, len(c.fullZones))
	for z := range c.fullZones {
		out = append(out, z)
	}
	sort.Strings(out)
	return out
}

// SetZoneCapacity makes a zone out of capacity (full true: every create
// placed there, of any class, fails with ResourceExhausted) or gives it
// capacity back. VMs already running there keep running.
func (c *Cloud) SetZoneCapacity(zone string, full bool) {
	c.mu.Lock()
	if full {
		c.fullZones[zone] = true
	} else {
		delete(c.fullZones, zone)
	}
	c.mu.Unlock()
	c.dirty()
}

// SetOutage turns the outage on or off: while on, every driver call but
// GetPluginInfo fails with Unavailable.
func (c *Cloud) SetOutage(on bool) {
	c.mu.Lock()
	c.outage = on
	c.mu.Unlock()
	c.dirty()
}

type createParams struct {
	namespace, machine, class string
	// machineUID is the Machine's metadata.uid, kept on the VM.
	machineUID   string
	spec         *classSpec
	raw          json.RawMessage
	nodeTemplate *v1alpha1.NodeTemplate
	userDataSHA  string
	orphan       bool
	// zone is the Machine's spec.failureDomain: the zone the VM must be
	// placed in; "" lets the sim pick the least loaded one.
	zone string
}

// createLocked makes a VM for the Machine, or returns the existing one
// (created false). Orphans are always made, even next to an existing VM.
func (c *Cloud) createLocked(p createParams) (*VM, bool, error) {
	key := machineKey(p.namespace, p.machine)
	ck := machineKey(p.namespace, p.class)
	if ids := c.byMachine[key]; len(ids) > 0 && !p.orphan {
		vm := c.vms[ids[0]]
		if vm.ClassName != p.class {
			return nil, false, driver.Errorf(driver.AlreadyExists,
				"VM %s of Machine %s was made from MachineClass %q, not %q", vm.ID, key, vm.ClassName, p.class)
		}
		return vm, false, nil
	}
	zone := p.zone
	if zone == "" {
		zone = c.pickZoneLocked(ck, key, p.spec.zones)
	} else if !slices.Contains(p.spec.zones, zone) {
		return nil, false, driver.Errorf(driver.InvalidArgument,
			"machine.spec.failureDomain: zone %q is not one of the class's providerSpec.zones (%s)", zone, strings.Join(p.spec.zones, ", "))
	}
	if p.spec.faults.fullZones[zone] || c.fullZones[zone] {
		return nil, false, driver.Errorf(driver.ResourceExhausted,
			"zone %s is out of capacity for %s; Machine %s is placed there", zone, p.spec.instanceType.Name, key)
	}
	now := c.clock.Now()
	id := c.newIDLocked(key)
	ip, ok := c.allocateIPLocked(id)
	if !ok {
		return nil, false, driver.Errorf(driver.ResourceExhausted, "no free InternalIP in 10.0.0.0/8")
	}
	vm := &VM{
		ID:                  id,
		ProviderID:          fmt.Sprintf("sim://%s/%s/%s", p.spec.region, zone, id),
		Region:              p.spec.region,
		Zone:                zone,
		InstanceType:        p.spec.instanceType.Name,
		Image:               p.spec.image,
		Namespace:           p.namespace,
		MachineName:         p.machine,
		MachineUID:          p.machineUID,
		ClassName:           p.class,
		NodeName:            c.nodeNameLocked(p.machine, id),
		InternalIP:          ip,
		State:               VMRunning,
		Initialized:         p.orphan || !p.spec.requireInit,
		Orphan:              p.orphan,
		Tags:                cloneMap(p.spec.tags),
		AppliedProviderSpec: compactJSON(p.raw),
		UserDataSHA256:      p.userDataSHA,
		CreatedAt:           now,
	}
	boot := p.spec.bootDelay
	if p.spec.bootJitter > 0 {
		boot += time.Duration(unit(p.spec.faults.seed, "boot-jitter", id) * float64(p.spec.bootJitter))
	}
	vm.BootAt = now.Add(boot)
	if !p.orphan {
		f := p.spec.faults
		if f.bootFailure != nil && c.selectLocked(f.seed, "boot-failure", ck, id, *f.bootFailure) {
			vm.NeverJoins = true
		}
		if f.notReady != nil && c.selectLocked(f.seed, "node-not-ready", ck, id, *f.notReady) {
			d := f.notReadyIn
			vm.NotReadyDelay = &d
		}
	}
	vm.Node = nodeTemplateFor(vm, p.spec, p.nodeTemplate)
	c.addLocked(vm)
	c.history = append(c.history, HistoryEntry{
		ID: id, ProviderID: vm.ProviderID, Namespace: p.namespace, MachineName: p.machine,
		ClassName: p.class, Orphan: p.orphan, CreatedAt: now,
	})
	c.historyAt[id] = len(c.history) - 1
	return vm, true, nil
}

// selectLocked decides a class-level Selection for a new VM: the first
// count VMs of the class, or each with probability.
func (c *Cloud) selectLocked(seed int64, what, classKey, id string, s selection) bool {
	switch {
	case s.count >= 0:
		c.counters[what+"|"+classKey]++
		return c.counters[what+"|"+classKey] <= s.count
	case s.probability >= 0:
		return unit(seed, what, id) < s.probability
	}
	return true
}

func (c *Cloud) addLocked(vm *VM) {
	key := machineKey(vm.Namespace, vm.MachineName)
	ck := machineKey(vm.Namespace, vm.ClassName)
	c.vms[vm.ID] = vm
	c.byMachine[key] = append(c.byMachine[key], vm.ID)
	c.byNode[vm.NodeName] = vm.ID
	if c.byClass[ck] == nil {
		c.byClass[ck] = map[string]struct{}{}
		c.zoneLoad[ck] = map[string]int{}
	}
	c.byClass[ck][vm.ID] = struct{}{}
	c.zoneLoad[ck][vm.Zone]++
	if ip, ok := parseIPv4(vm.InternalIP); ok {
		c.ips[ip] = vm.ID
	}
}

// moveClassLocked makes vm a VM of class (an in-place update to another
// class): ListMachines of that class lists it, zone spreading counts it there.
func (c *Cloud) moveClassLocked(vm *VM, class string) {
	if vm.ClassName == class {
		return
	}
	from, to := machineKey(vm.Namespace, vm.ClassName), machineKey(vm.Namespace, class)
	delete(c.byClass[from], vm.ID)
	c.zoneLoad[from][vm.Zone]--
	if len(c.byClass[from]) == 0 {
		delete(c.byClass, from)
		delete(c.zoneLoad, from)
	}
	if c.byClass[to] == nil {
		c.byClass[to] = map[string]struct{}{}
		c.zoneLoad[to] = map[string]int{}
	}
	c.byClass[to][vm.ID] = struct{}{}
	c.zoneLoad[to][vm.Zone]++
	vm.ClassName = class
}

// removeLocked deletes a VM and records when in its history entry.
func (c *Cloud) removeLocked(vm *VM) HistoryEntry {
	key := machineKey(vm.Namespace, vm.MachineName)
	ck := machineKey(vm.Namespace, vm.ClassName)
	delete(c.vms, vm.ID)
	ids := slices.DeleteFunc(c.byMachine[key], func(id string) bool { return id == vm.ID })
	if len(ids) == 0 {
		delete(c.byMachine, key)
	} else {
		c.byMachine[key] = ids
	}
	if c.byNode[vm.NodeName] == vm.ID {
		delete(c.byNode, vm.NodeName)
	}
	delete(c.byClass[ck], vm.ID)
	c.zoneLoad[ck][vm.Zone]--
	if len(c.byClass[ck]) == 0 {
		delete(c.byClass, ck)
		delete(c.zoneLoad, ck)
	}
	if ip, ok := parseIPv4(vm.InternalIP); ok && c.ips[ip] == vm.ID {
		delete(c.ips, ip)
	}
	var h HistoryEntry
	if i, ok := c.historyAt[vm.ID]; ok {
		now := c.clock.Now()
		c.history[i].DeletedAt = &now
		h = c.history[i].clone()
	}
	return h
}

// newIDLocked derives the ID of a Machine's next VM from its key and how
// many VMs the key had, probing past any ID ever used: IDs are stable
// across restarts and never reused, so a providerID names one VM forever.
func (c *Cloud) newIDLocked(key string) string {
	for n := 1; ; n++ {
		seed := key
		if n > 1 {
			seed = fmt.Sprintf("%s#%d", key, n)
		}
		id := "vm-" + shortHash(seed, 10)
		if _, used := c.historyAt[id]; !used {
			return id
		}
	}
}

// pickZoneLocked places a VM in the class's least loaded zone; ties go
// round the zone list from a point derived from the Machine's key, so
// placement depends only on the state, not on timing.
func (c *Cloud) pickZoneLocked(classKey, machine string, zones []string) string {
	start := int(hash64(machine) % uint64(len(zones)))
	best, bestLoad := "", -1
	for i := range zones {
		z := zones[(start+i)%len(zones)]
		if l := c.zoneLoad[classKey][z]; bestLoad < 0 || l < bestLoad {
			best, bestLoad = z, l
		}
	}
	return best
}

// nodeNameLocked is the Machine's name, unless a live VM already has a
// Node of that name (a second VM claiming the Machine, or a Machine of the
// same name in another namespace).
func (c *Cloud) nodeNameLocked(machine, id string) string {
	if _, taken := c.byNode[machine]; !taken {
		return machine
	}
	return machine + "-" + strings.TrimPrefix(id, "vm-")[:5]
}

// nextCallLocked counts a call of an operation for a key and returns its
// number, starting at 1.
func (c *Cloud) nextCallLocked(o op, key string) int {
	k := string(o) + "|" + key
	c.counters[k]++
	return c.counters[k]
}

func (c *Cloud) recordClass(namespace string, mc *v1alpha1.MachineClass) {
	ck := machineKey(namespace, mc.Name)
	raw := compactJSON(mc.Spec.ProviderSpec.Raw)
	c.mu.RLock()
	rec, ok := c.classes[ck]
	c.mu.RUnlock()
	if ok && string(rec.ProviderSpec) == string(raw) && apiequality.Semantic.DeepEqual(rec.NodeTemplate, mc.Spec.NodeTemplate) {
		return
	}
	c.mu.Lock()
	c.classes[ck] = ClassRecord{ProviderSpec: raw, NodeTemplate: mc.Spec.NodeTemplate.DeepCopy()}
	c.mu.Unlock()
	c.dirty()
}

// sortVMsLocked orders VMs by creation, as the history does.
func (c *Cloud) sortVMsLocked(vms []VM) {
	sort.Slice(vms, func(i, j int) bool { return c.historyAt[vms[i].ID] < c.historyAt[vms[j].ID] })
}

func compactJSON(raw []byte) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return slices.Clone(raw)
	}
	return b.Bytes()
}
