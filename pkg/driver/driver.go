// Package driver is the contract between Millwright and a provider of
// machines: the Driver interface, its requests and responses, the machine
// error codes, and what Millwright does after each code.
//
// A provider implements Driver in Go and either registers it in-process or
// serves it as its own program over gRPC:
//
//	func main() { log.Fatal(driver.Serve(myDriver)) }
//
// Every method returns either a response or an error carrying a machine
// error Code (build one with Errorf, read one with CodeOf). Optional methods
// a provider does not implement return Unimplemented; embed
// UnimplementedDriver to get that for free.
package driver

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Driver creates, initializes, inspects, updates and deletes the VMs that
// back Machines. Implementations must be safe for concurrent use.
type Driver interface {
	// CreateMachine creates the VM of req.Machine, or returns the one that
	// already exists for that Machine name (OK). It must be idempotent:
	// two calls for one Machine never make two VMs.
	CreateMachine(ctx context.Context, req *CreateMachineRequest) (*CreateMachineResponse, error)

	// InitializeMachine runs post-create setup of a VM (network settings,
	// ...). Optional: Unimplemented means there is nothing to do.
	// Uninitialized asks to be called again.
	InitializeMachine(ctx context.Context, req *InitializeMachineRequest) (*InitializeMachineResponse, error)

	// DeleteMachine deletes the VM of req.Machine. A VM that does not exist
	// is OK (or NotFound): deletion must be idempotent.
	DeleteMachine(ctx context.Context, req *DeleteMachineRequest) (*DeleteMachineResponse, error)

	// GetMachineStatus reports the VM of req.Machine: NotFound when there is
	// none, Uninitialized when it exists but is not initialized, OutOfRange
	// when several VMs claim the Machine. Optional.
	GetMachineStatus(ctx context.Context, req *GetMachineStatusRequest) (*GetMachineStatusResponse, error)

	// ListMachines lists the VMs made from req.MachineClass, each with the
	// UID of the Machine it was made for, for orphan collection: a VM is
	// known by that UID, never by the form of its providerID (which may
	// change, e.g. with a host's name). Optional.
	ListMachines(ctx context.Context, req *ListMachinesRequest) (*ListMachinesResponse, error)

	// GetVolumeIDs maps persistent volume specs to the provider's volume
	// IDs, so the drain can wait for each volume to detach. Optional.
	GetVolumeIDs(ctx context.Context, req *GetVolumeIDsRequest) (*GetVolumeIDsResponse, error)

	// UpdateMachine applies the class's providerSpec to an existing VM
	// without replacing it: the fields a cloud can change on a running VM
	// (tags, ...; an instance size, with a restart). The class may be
	// another one than the VM was made from (an in-place update moves a
	// Machine to its new MachineSet's class): afterwards the VM belongs to
	// that class, and ListMachines lists it under that class. A change
	// the VM cannot take while it exists (a new image, another zone) is
	// answered FailedPrecondition, before anything is changed: the
	// Machine is then replaced instead (docs/driver-errors.md). It must be
	// idempotent: after a restart it may be called again with the same
	// request. Optional.
	UpdateMachine(ctx context.Context, req *UpdateMachineRequest) (*UpdateMachineResponse, error)

	// GetPluginInfo names the driver and says which optional methods it
	// implements.
	GetPluginInfo(ctx context.Context, req *GetPluginInfoRequest) (*GetPluginInfoResponse, error)

	// ReceiveEvents answers what the provider announced about the
	// driver's VMs since the last call: interruptions above all (events.go).
	// It may wait up to req.Wait for one. Optional.
	ReceiveEvents(ctx context.Context, req *ReceiveEventsRequest) (*ReceiveEventsResponse, error)
}

// CreateMachineRequest asks for the VM of one Machine.
type CreateMachineRequest struct {
	// Machine whose VM is to be created. Its name identifies the VM.
	Machine *v1alpha1.Machine
	// MachineClass of the Machine: provider and providerSpec.
	MachineClass *v1alpha1.MachineClass
	// Secret holds the class's secret data merged with its credentials;
	// key "userData" is the VM's boot script with per-Machine placeholders
	// already replaced.
	Secret *corev1.Secret
}

// CreateMachineResponse describes the created (or found) VM.
type CreateMachineResponse struct {
	// ProviderID uniquely identifies the VM; it equals the Node's spec.providerID.
	ProviderID string
	// NodeName is the name the VM's Node registers with.
	NodeName string
	// LastKnownState is opaque state kept on the Machine and handed back on
	// the next call, so an interrupted operation can resume.
	LastKnownState string
	// Addresses of the VM, when known.
	Addresses []v1alpha1.MachineAddress
	// NodeLabels are facts about the VM for the Machine's labels and its
	// Node's (e.g. CapacityTypeLabel: "spot"); optional. Only keys under
	// NodeLabelPrefix are taken: the manager drops any other key, with a
	// log line (see AllowedNodeLabels).
	NodeLabels map[string]string
}

// InitializeMachineRequest asks for post-create initialization of a VM.
type InitializeMachineRequest struct {
	Machine      *v1alpha1.Machine
	MachineClass *v1alpha1.MachineClass
	Secret       *corev1.Secret
}

// InitializeMachineResponse describes the initialized VM.
type InitializeMachineResponse struct {
	ProviderID string
	NodeName   string
}

// DeleteMachineRequest asks for the deletion of a Machine's VM.
type DeleteMachineRequest struct {
	Machine      *v1alpha1.Machine
	MachineClass *v1alpha1.MachineClass
	Secret       *corev1.Secret
}

// DeleteMachineResponse reports a deletion.
type DeleteMachineResponse struct {
	// LastKnownState is opaque state kept on the Machine (see CreateMachineResponse).
	LastKnownState string
}

// GetMachineStatusRequest asks about the VM of one Machine.
type GetMachineStatusRequest struct {
	Machine      *v1alpha1.Machine
	MachineClass *v1alpha1.MachineClass
	Secret       *corev1.Secret
}

// GetMachineStatusResponse describes an existing VM.
type GetMachineStatusResponse struct {
	ProviderID string
	NodeName   string
	Addresses  []v1alpha1.MachineAddress
	// Progress is what the VM last said about its boot, for a person (e.g.
	// the last lines of its serial console); optional. The manager shows
	// it in lastOperation while the Machine waits for its Node.
	Progress string
	// NodeLabels, as in CreateMachineResponse.
	NodeLabels map[string]string
}

// NodeLabelPrefix is the one label domain a driver may set through
// NodeLabels. Labels outside it belong to others — the kubelet
// (kubernetes.io/...), node roles, the user's nodeTemplate — and a driver
// setting them could steer the scheduler or claim a role.
const NodeLabelPrefix = "node.millwright.dev/"

// CapacityTypeLabel says how a VM was bought: CapacityTypeSpot or
// CapacityTypeOnDemand. A driver whose cloud sells both reports it in
// NodeLabels.
const CapacityTypeLabel = NodeLabelPrefix + "capacity-type"

// The values of CapacityTypeLabel.
const (
	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
)

// AllowedNodeLabels splits a driver's NodeLabels into those the manager
// takes — keys under NodeLabelPrefix that, with their values, are valid
// Kubernetes labels — and the keys it refuses, sorted, each with why.
func AllowedNodeLabels(labels map[string]string) (allowed map[string]string, refused []string) {
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		v := labels[k]
		var why []string
		switch {
		case !strings.HasPrefix(k, NodeLabelPrefix):
			why = []string{"not under " + NodeLabelPrefix}
		default:
			why = append(validation.IsQualifiedName(k), validation.IsValidLabelValue(v)...)
		}
		if len(why) > 0 {
			refused = append(refused, fmt.Sprintf("%q: %s", k, strings.Join(why, "; ")))
			continue
		}
		if allowed == nil {
			allowed = map[string]string{}
		}
		allowed[k] = v
	}
	return allowed, refused
}

// ListMachinesRequest asks for the VMs made from one class, or for one
// page of them.
type ListMachinesRequest struct {
	MachineClass *v1alpha1.MachineClass
	Secret       *corev1.Secret
	// PageSize is the most VMs the caller wants in this answer; 0: no
	// bound. A driver that pages answers at most this many (more only
	// where its provider pages more coarsely, as EC2 at fewer than 5) and
	// a NextPageToken while VMs remain; one that does not answers every
	// VM and no token. The orphan collector asks for pages, so that a
	// fleet's VMs are never all in its memory at once.
	PageSize int32
	// PageToken is empty for the first page, else the NextPageToken of the
	// previous answer. A VM that exists from the first page to the last is
	// listed on one of them at least; one made or deleted meanwhile may be
	// listed or not.
	PageToken string
}

// ListMachinesResponse lists VMs.
type ListMachinesResponse struct {
	// VMs are the class's VMs (of this page), one entry each.
	VMs []ListedVM
	// NextPageToken is set while VMs remain: the PageToken of the next
	// page.
	NextPageToken string
}

// MachineNames maps each listed VM's providerID to the name of its Machine.
func (r *ListMachinesResponse) MachineNames() map[string]string {
	out := make(map[string]string, len(r.VMs))
	for _, vm := range r.VMs {
		out[vm.ProviderID] = vm.MachineName
	}
	return out
}

// ListedVM is one VM ListMachines found and the Machine it was made for.
type ListedVM struct {
	// ProviderID of the VM as the driver names it now. It may differ from
	// the one the Machine recorded at its create (a renamed libvirt host):
	// the orphan collector asks GetMachineStatus before it calls a VM
	// claimed by a live Machine another one.
	ProviderID string
	// MachineName is the name of the Machine the VM was made for, in the
	// class's namespace.
	MachineName string
	// MachineUID is that Machine's metadata.uid, which the VM carries (a
	// tag, its metadata). The orphan collector matches VMs to Machines by
	// it: a VM whose UID no Machine has is an orphan. Empty only from a
	// driver that cannot tell; such a VM is matched by MachineName.
	MachineUID string
}

// GetVolumeIDsRequest asks for the provider volume IDs of persistent volumes.
type GetVolumeIDsRequest struct {
	PVSpecs []*corev1.PersistentVolumeSpec
}

// GetVolumeIDsResponse lists the volume IDs the driver recognised; specs it
// does not recognise are left out.
type GetVolumeIDsResponse struct {
	VolumeIDs []string
}

// UpdateMachineRequest asks to apply the class's current providerSpec to an
// existing VM in place.
type UpdateMachineRequest struct {
	Machine *v1alpha1.Machine
	// ProviderID of the VM to update.
	ProviderID string
	// LastAppliedProviderSpec is the providerSpec the VM was last created or
	// updated with, so the driver can tell what changed.
	LastAppliedProviderSpec runtime.RawExtension
	MachineClass            *v1alpha1.MachineClass
	Secret                  *corev1.Secret
}

// UpdateMachineResponse reports an update.
type UpdateMachineResponse struct{}

// GetPluginInfoRequest asks a driver who it is.
type GetPluginInfoRequest struct{}

// GetPluginInfoResponse names a driver and its optional methods.
type GetPluginInfoResponse struct {
	// Name of the driver, as MachineClass spec.provider names it.
	Name string
	// Version of the driver.
	Version string
	// Implements lists the optional methods the driver implements.
	Implements []Method
}

// Method names a Driver method.
type Method string

// The Driver methods.
const (
	MethodCreateMachine     Method = "CreateMachine"
	MethodInitializeMachine Method = "InitializeMachine"
	MethodDeleteMachine     Method = "DeleteMachine"
	MethodGetMachineStatus  Method = "GetMachineStatus"
	MethodListMachines      Method = "ListMachines"
	MethodGetVolumeIDs      Method = "GetVolumeIDs"
	MethodUpdateMachine     Method = "UpdateMachine"
	MethodGetPluginInfo     Method = "GetPluginInfo"
	MethodReceiveEvents     Method = "ReceiveEvents"
)

// OptionalMethods are the methods a driver may leave unimplemented.
var OptionalMethods = []Method{
	MethodInitializeMachine, MethodGetMachineStatus, MethodListMachines,
	MethodGetVolumeIDs, MethodUpdateMachine, MethodReceiveEvents,
}

// UnimplementedDriver answers Unimplemented to every optional method. Embed
// it in a driver and implement only what the provider supports.
type UnimplementedDriver struct{}

// InitializeMachine returns Unimplemented.
func (UnimplementedDriver) InitializeMachine(context.Context, *InitializeMachineRequest) (*InitializeMachineResponse, error) {
	return nil, Errorf(Unimplemented, "InitializeMachine is not implemented")
}

// GetMachineStatus returns Unimplemented.
func (UnimplementedDriver) GetMachineStatus(context.Context, *GetMachineStatusRequest) (*GetMachineStatusResponse, error) {
	return nil, Errorf(Unimplemented, "GetMachineStatus is not implemented")
}

// ListMachines returns Unimplemented.
func (UnimplementedDriver) ListMachines(context.Context, *ListMachinesRequest) (*ListMachinesResponse, error) {
	return nil, Errorf(Unimplemented, "ListMachines is not implemented")
}

// GetVolumeIDs returns Unimplemented.
func (UnimplementedDriver) GetVolumeIDs(context.Context, *GetVolumeIDsRequest) (*GetVolumeIDsResponse, error) {
	return nil, Errorf(Unimplemented, "GetVolumeIDs is not implemented")
}

// UpdateMachine returns Unimplemented.
func (UnimplementedDriver) UpdateMachine(context.Context, *UpdateMachineRequest) (*UpdateMachineResponse, error) {
	return nil, Errorf(Unimplemented, "UpdateMachine is not implemented")
}
