package sim

import (
	"encoding/json"
	"fmt"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// The Cloud's methods below act behind Millwright's back, as a person at
// the cloud's console or a failing data centre would; the admin API calls
// them.

// KillVM stops a VM: it stays in the cloud, but its Node stops
// heartbeating and goes NotReady.
func (c *Cloud) KillVM(id string) (VM, error) {
	c.mu.Lock()
	vm, ok := c.vms[id]
	if !ok {
		c.mu.Unlock()
		return VM{}, driver.Errorf(driver.NotFound, "no VM %q", id)
	}
	vm.State = VMStopped
	out, node := vm.clone(), vm.NodeName
	c.mu.Unlock()
	c.changed(node, 0)
	c.dirty()
	return out, nil
}

// DeleteVM deletes a VM as if someone deleted it in the cloud's console:
// the Machine's GetMachineStatus answers NotFound and its Node goes NotReady.
func (c *Cloud) DeleteVM(id string) (HistoryEntry, error) {
	c.mu.Lock()
	vm, ok := c.vms[id]
	if !ok {
		c.mu.Unlock()
		return HistoryEntry{}, driver.Errorf(driver.NotFound, "no VM %q", id)
	}
	h := c.removeLocked(vm)
	c.mu.Unlock()
	c.changed(vm.NodeName, 0)
	c.dirty()
	return h, nil
}

// SetNodeReady makes the Node of the VM with that node name NotReady
// (ready false) while its VM keeps running, or lets it be Ready again.
func (c *Cloud) SetNodeReady(nodeName string, ready bool) (VM, error) {
	c.mu.Lock()
	id, ok := c.byNode[nodeName]
	if !ok {
		c.mu.Unlock()
		return VM{}, driver.Errorf(driver.NotFound, "no VM has node %q", nodeName)
	}
	vm := c.vms[id]
	vm.NodeNotReady = !ready
	if ready {
		// A Node made Ready by hand stays so: the fault timer is spent.
		vm.NotReadyDelay = nil
	}
	out := vm.clone()
	c.mu.Unlock()
	c.changed(nodeName, 0)
	c.dirty()
	return out, nil
}

// OrphanRequest asks for a VM no Machine asked for.
type OrphanRequest struct {
	// Namespace and ClassName name the MachineClass the VM pretends to come
	// from. Its providerSpec is the one the sim last saw for that class,
	// unless ProviderSpec is given.
	Namespace string `json:"namespace"`
	ClassName string `json:"className"`
	// MachineName the VM claims; default a made-up "orphan-<n>". Naming an
	// existing Machine makes a second VM claim it (GetMachineStatus then
	// answers OutOfRange).
	MachineName  string          `json:"machineName,omitempty"`
	ProviderSpec json.RawMessage `json:"providerSpec,omitempty"`
}

// CreateOrphan makes a VM for a made-up (or given) Machine name of a class,
// as a bug or a lost response would leave behind. Its Node registers like
// any other.
func (c *Cloud) CreateOrphan(req OrphanRequest) (VM, error) {
	if req.Namespace == "" || req.ClassName == "" {
		return VM{}, driver.Errorf(driver.InvalidArgument, "namespace and className must be set")
	}
	ck := machineKey(req.Namespace, req.ClassName)
	raw := req.ProviderSpec
	var nt *v1alpha1.NodeTemplate
	c.mu.RLock()
	rec, seen := c.classes[ck]
	c.mu.RUnlock()
	if len(raw) == 0 {
		if !seen {
			return VM{}, driver.Errorf(driver.NotFound, "the sim has not seen MachineClass %s yet; pass providerSpec", ck)
		}
		raw = rec.ProviderSpec
	}
	if seen {
		nt = rec.NodeTemplate
	}
	_, cs, err := parseProviderSpec(raw)
	if err != nil {
		return VM{}, err
	}
	c.mu.Lock()
	name := req.MachineName
	if name == "" {
		c.orphanSeq++
		name = fmt.Sprintf("orphan-%d-%s", c.orphanSeq, shortHash(ck, 5))
	}
	vm, _, err := c.createLocked(createParams{
		namespace: req.Namespace, machine: name, class: req.ClassName,
		spec: cs, raw: raw, nodeTemplate: nt, orphan: true,
	})
	var out VM
	if err == nil {
		out = vm.clone()
	}
	c.mu.Unlock()
	if err != nil {
		return VM{}, err
	}
	c.changed(out.NodeName, out.BootAt.Sub(c.clock.Now()))
	c.dirty()
	return out, nil
}
