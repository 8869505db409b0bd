package sim

import (
	"encoding/json"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// VMState is whether a VM runs.
type VMState string

// The states of a VM. A deleted VM is gone from the cloud; only its
// HistoryEntry remains.
const (
	// VMRunning: the VM runs; its Node registers once it has booted.
	VMRunning VMState = "Running"
	// VMStopped: the VM was killed (admin endpoint); it still exists, but
	// its Node stops heartbeating and goes NotReady.
	VMStopped VMState = "Stopped"
)

// VM is one simulated virtual machine.
type VM struct {
	// ID is derived from the Machine's namespace and name (and how many VMs
	// that Machine name had before), so it is stable and never reused.
	ID           string `json:"id"`
	ProviderID   string `json:"providerID"`
	Region       string `json:"region"`
	Zone         string `json:"zone"`
	InstanceType string `json:"instanceType"`
	// Image is the image the VM booted from (providerSpec.image).
	Image string `json:"image,omitempty"`
	// Namespace of the Machine and of its MachineClass.
	Namespace   string `json:"namespace"`
	MachineName string `json:"machineName"`
	// MachineUID is the metadata.uid of the Machine the VM was made for
	// (empty for an orphan made through the admin endpoint): ListMachines
	// reports it, and the orphan collection knows the VM by it.
	MachineUID string `json:"machineUID,omitempty"`
	// ClassName is the MachineClass the VM was created from, or last
	// updated to (UpdateMachine with another class: an in-place update);
	// ListMachines lists a class's VMs by it.
	ClassName  string  `json:"className"`
	NodeName   string  `json:"nodeName"`
	InternalIP string  `json:"internalIP"`
	State      VMState `json:"state"`
	// Initialized is set by InitializeMachine; until then GetMachineStatus
	// answers Uninitialized.
	Initialized bool `json:"initialized"`
	// Orphan marks a VM made through the admin endpoint, not by a driver call.
	Orphan bool `json:"orphan,omitempty"`
	// Tags are the providerSpec's tags, kept current by UpdateMachine.
	Tags map[string]string `json:"tags,omitempty"`
	// AppliedProviderSpec is the providerSpec the VM was created or last
	// updated with.
	AppliedProviderSpec json.RawMessage `json:"appliedProviderSpec,omitempty"`
	// Updates counts the UpdateMachine calls applied to the VM.
	Updates int `json:"updates,omitempty"`
	// UserDataSHA256 is the hash of the user data the VM booted with.
	UserDataSHA256 string    `json:"userDataSHA256,omitempty"`
	CreatedAt      time.Time `json:"createdAt"`
	// BootAt is when the VM has booted and its Node registers.
	BootAt time.Time `json:"bootAt"`
	// NeverJoins: the VM boots but its Node never registers (boot failure fault).
	NeverJoins bool `json:"neverJoins,omitempty"`
	// NodeRegisteredAt is when the Node was registered in the cluster.
	NodeRegisteredAt *time.Time `json:"nodeRegisteredAt,omitempty"`
	// NotReadyDelay, when set, makes the Node go NotReady this long after
	// it registered (NodeNotReady fault).
	NotReadyDelay *time.Duration `json:"notReadyDelay,omitempty"`
	// NodeNotReady: the Node is made NotReady although the VM runs.
	NodeNotReady bool `json:"nodeNotReady,omitempty"`
	// Node is what the VM's Node registers with.
	Node NodeTemplate `json:"node"`
}

// NodeTemplate is what a VM's "kubelet" registers its Node with, fixed when
// the VM is created (as a real VM's boot configuration is).
type NodeTemplate struct {
	Labels       map[string]string   `json:"labels,omitempty"`
	Taints       []corev1.Taint      `json:"taints,omitempty"`
	Capacity     corev1.ResourceList `json:"capacity,omitempty"`
	Architecture string              `json:"architecture"`
}

// HistoryEntry records a VM that was ever created, and when it was deleted.
// Tests prove with it that no Machine ever had two VMs.
type HistoryEntry struct {
	ID          string     `json:"id"`
	ProviderID  string     `json:"providerID"`
	Namespace   string     `json:"namespace"`
	MachineName string     `json:"machineName"`
	ClassName   string     `json:"className"`
	Orphan      bool       `json:"orphan,omitempty"`
	CreatedAt   time.Time  `json:"createdAt"`
	DeletedAt   *time.Time `json:"deletedAt,omitempty"`
}

// Booted reports whether the VM has booted at now.
func (vm *VM) Booted(now time.Time) bool { return !now.Before(vm.BootAt) }

func (vm *VM) clone() VM {
	c := *vm
	c.Tags = cloneMap(vm.Tags)
	c.AppliedProviderSpec = slices.Clone(vm.AppliedProviderSpec)
	if vm.NodeRegisteredAt != nil {
		t := *vm.NodeRegisteredAt
		c.NodeRegisteredAt = &t
	}
	if vm.NotReadyDelay != nil {
		d := *vm.NotReadyDelay
		c.NotReadyDelay = &d
	}
	c.Node.Labels = cloneMap(vm.Node.Labels)
	c.Node.Taints = slices.Clone(vm.Node.Taints)
	c.Node.Capacity = vm.Node.Capacity.DeepCopy()
	return c
}

func (h *HistoryEntry) clone() HistoryEntry {
	c := *h
	if h.DeletedAt != nil {
		t := *h.DeletedAt
		c.DeletedAt = &t
	}
	return c
}
