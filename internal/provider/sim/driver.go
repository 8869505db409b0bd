package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
	"github.com/millwright-dev/millwright/pkg/driver"
)

// CSIDriverName is the CSI driver of the sim's volumes: GetVolumeIDs
// recognises persistent volumes of this driver and no others.
const CSIDriverName = "sim.millwright.dev"

// call is what every class-bound driver call starts with: the outage
// switch, the context, the request's Machine and class, the providerSpec.
type call struct {
	machine *v1alpha1.Machine
	class   *v1alpha1.MachineClass
	spec    *classSpec
	key     string // the Machine's namespace/name
}

func (s *Sim) begin(ctx context.Context, m *v1alpha1.Machine, mc *v1alpha1.MachineClass, needMachine bool) (*call, error) {
	if s.cloud.Outage() {
		return nil, driver.Errorf(driver.Unavailable, "the sim cloud is in an outage (switched on through its admin endpoint); try again later")
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err)
	}
	c := &call{machine: m, class: mc}
	if needMachine {
		if m == nil {
			return nil, driver.Errorf(driver.InvalidArgument, "machine: must be set")
		}
		if m.Name == "" {
			return nil, driver.Errorf(driver.InvalidArgument, "machine.metadata.name: must not be empty: it names the VM")
		}
		c.key = machineKey(m.Namespace, m.Name)
	}
	if mc == nil {
		return nil, driver.Errorf(driver.InvalidArgument, "machineClass: must be set")
	}
	if mc.Name == "" {
		return nil, driver.Errorf(driver.InvalidArgument, "machineClass.metadata.name: must not be empty: VMs are tagged with it")
	}
	_, cs, err := parseProviderSpec(mc.Spec.ProviderSpec.Raw)
	if err != nil {
		return nil, err
	}
	c.spec = cs
	s.cloud.recordClass(c.namespace(), mc)
	return c, nil
}

// namespace is the Machine's namespace, or the class's when the call has
// no Machine: a Machine's class lives in the Machine's namespace.
func (c *call) namespace() string {
	if c.machine != nil {
		return c.machine.Namespace
	}
	return c.class.Namespace
}

// CreateMachine creates the Machine's VM, or returns the one it already
// has: one Machine (namespace and name) never gets two VMs.
func (s *Sim) CreateMachine(ctx context.Context, req *driver.CreateMachineRequest) (*driver.CreateMachineResponse, error) {
	if req == nil {
		return nil, driver.Errorf(driver.InvalidArgument, "request: must be set")
	}
	c, err := s.begin(ctx, req.Machine, req.MachineClass, true)
	if err != nil {
		return nil, err
	}
	defer s.calls.enter(c.class.Namespace+"/"+c.class.Name, opCreate)()
	v, err := s.fault(ctx, c.spec, opCreate, c.key)
	if err != nil {
		return nil, err
	}
	if v.err != nil && !v.afterEffect {
		return nil, v.err
	}
	s.cloud.mu.Lock()
	vm, created, err := s.cloud.createLocked(createParams{
		namespace: c.machine.Namespace, machine: c.machine.Name, machineUID: string(c.machine.UID), class: c.class.Name,
		spec: c.spec, raw: c.class.Spec.ProviderSpec.Raw, nodeTemplate: c.class.Spec.NodeTemplate,
		userDataSHA: userDataHash(req.Secret), zone: c.machine.Spec.FailureDomain,
	})
	var out VM
	if err == nil {
		out = vm.clone()
	}
	s.cloud.mu.Unlock()
	if err != nil {
		return nil, err
	}
	if created {
		s.cloud.changed(out.NodeName, out.BootAt.Sub(s.clock.Now()))
		if err := s.persist(); err != nil {
			return nil, err
		}
	}
	if v.err != nil {
		return nil, v.err
	}
	return &driver.CreateMachineResponse{
		ProviderID:     out.ProviderID,
		NodeName:       out.NodeName,
		LastKnownState: encodeState(&out, "Created"),
		Addresses:      addresses(&out),
		NodeLabels:     c.spec.nodeLabels(),
	}, nil
}

// InitializeMachine marks the Machine's VM initialized.
func (s *Sim) InitializeMachine(ctx context.Context, req *driver.InitializeMachineRequest) (*driver.InitializeMachineResponse, error) {
	if req == nil {
		return nil, driver.Errorf(driver.InvalidArgument, "request: must be set")
	}
	c, err := s.begin(ctx, req.Machine, req.MachineClass, true)
	if err != nil {
		return nil, err
	}
	v, err := s.fault(ctx, c.spec, opInitialize, c.key)
	if err != nil {
		return nil, err
	}
	if v.err != nil && !v.afterEffect {
		return nil, v.err
	}
	s.cloud.mu.Lock()
	vm := s.cloud.targetLocked(c.machine)
	var out VM
	if vm != nil {
		vm.Initialized = true
		out = vm.clone()
	}
	s.cloud.mu.Unlock()
	if vm == nil {
		return nil, driver.Errorf(driver.NotFound, "Machine %s has no VM to initialize", c.key)
	}
	s.cloud.dirty()
	if v.err != nil {
		return nil, v.err
	}
	return &driver.InitializeMachineResponse{ProviderID: out.ProviderID, NodeName: out.NodeName}, nil
}

// DeleteMachine deletes the Machine's VM. A Machine without a VM is OK.
func (s *Sim) DeleteMachine(ctx context.Context, req *driver.DeleteMachineRequest) (*driver.DeleteMachineResponse, error) {
	if req == nil {
		return nil, driver.Errorf(driver.InvalidArgument, "request: must be set")
	}
	c, err := s.begin(ctx, req.Machine, req.MachineClass, true)
	if err != nil {
		return nil, err
	}
	defer s.calls.enter(c.class.Namespace+"/"+c.class.Name, opDelete)()
	v, err := s.fault(ctx, c.spec, opDelete, c.key)
	if err != nil {
		return nil, err
	}
	if v.err != nil && !v.afterEffect {
		return nil, v.err
	}
	s.cloud.mu.Lock()
	var victims []*VM
	if vm := s.cloud.vmByProviderIDLocked(c.machine.Spec.ProviderID); vm != nil && machineKey(vm.Namespace, vm.MachineName) == c.key {
		// The Machine names its VM: delete that one; other VMs claiming
		// the Machine are orphans for the orphan collection to judge.
		victims = []*VM{vm}
	} else if c.machine.Spec.ProviderID == "" || c.machine.UID != "" {
		// Every VM claiming the Machine: made for its UID, or claiming its
		// name without one (an admin-made orphan); never a VM made for
		// another Machine of the same name (one made again after a
		// deletion). A providerID of a VM already gone, without a UID, is
		// the orphan collection's: it names all it may delete.
		for _, id := range s.cloud.byMachine[c.key] {
			if vm := s.cloud.vms[id]; c.machine.UID == "" || vm.MachineUID == "" || vm.MachineUID == string(c.machine.UID) {
				victims = append(victims, vm)
			}
		}
	}
	state := `{"state":"Deleted"}`
	for _, vm := range victims {
		s.cloud.removeLocked(vm)
		state = encodeState(vm, "Deleted")
	}
	s.cloud.mu.Unlock()
	for _, vm := range victims {
		s.cloud.changed(vm.NodeName, 0)
	}
	if len(victims) > 0 {
		if err := s.persist(); err != nil {
			return nil, err
		}
	}
	if v.err != nil {
		return nil, v.err
	}
	return &driver.DeleteMachineResponse{LastKnownState: state}, nil
}

// GetMachineStatus reports the Machine's VM: the one its providerID names
// when that one claims it, else NotFound without one, OutOfRange when
// several claim the Machine; Uninitialized before InitializeMachine ran.
// Answering by providerID first is what lets the orphan collection ask
// whether a Machine's VM is the one it listed.
func (s *Sim) GetMachineStatus(ctx context.Context, req *driver.GetMachineStatusRequest) (*driver.GetMachineStatusResponse, error) {
	if req == nil {
		return nil, driver.Errorf(driver.InvalidArgument, "request: must be set")
	}
	c, err := s.begin(ctx, req.Machine, req.MachineClass, true)
	if err != nil {
		return nil, err
	}
	v, err := s.fault(ctx, c.spec, opGetStatus, c.key)
	if err != nil {
		return nil, err
	}
	if v.err != nil {
		return nil, v.err
	}
	vms := s.cloud.MachineVMs(c.machine.Namespace, c.machine.Name)
	if id := idFromProviderID(c.machine.Spec.ProviderID); id != "" {
		if i := slices.IndexFunc(vms, func(vm VM) bool { return vm.ID == id }); i >= 0 {
			vms = vms[i : i+1]
		}
	}
	switch {
	case len(vms) == 0:
		return nil, driver.Errorf(driver.NotFound, "Machine %s has no VM", c.key)
	case len(vms) > 1:
		ids := make([]string, len(vms))
		for i := range vms {
			ids[i] = vms[i].ProviderID
		}
		return nil, driver.Errorf(driver.OutOfRange, "%d VMs claim Machine %s: %s", len(vms), c.key, strings.Join(ids, ", "))
	case !vms[0].Initialized:
		return nil, driver.Errorf(driver.Uninitialized, "VM %s of Machine %s exists but is not initialized", vms[0].ProviderID, c.key)
	}
	return &driver.GetMachineStatusResponse{
		ProviderID: vms[0].ProviderID,
		NodeName:   vms[0].NodeName,
		Addresses:  addresses(&vms[0]),
		NodeLabels: c.spec.nodeLabels(),
	}, nil
}

// ListMachines lists the VMs tagged with the class, each with the name and
// UID of the Machine it was made for, a page at a time (driver.PageOf).
func (s *Sim) ListMachines(ctx context.Context, req *driver.ListMachinesRequest) (*driver.ListMachinesResponse, error) {
	if req == nil {
		return nil, driver.Errorf(driver.InvalidArgument, "request: must be set")
	}
	c, err := s.begin(ctx, nil, req.MachineClass, false)
	if err != nil {
		return nil, err
	}
	ck := machineKey(c.class.Namespace, c.class.Name)
	v, err := s.fault(ctx, c.spec, opList, ck)
	if err != nil {
		return nil, err
	}
	if v.err != nil {
		return nil, v.err
	}
	s.cloud.mu.RLock()
	list := make([]driver.ListedVM, 0, len(s.cloud.byClass[ck]))
	for id := range s.cloud.byClass[ck] {
		vm := s.cloud.vms[id]
		list = append(list, driver.ListedVM{ProviderID: vm.ProviderID, MachineName: vm.MachineName, MachineUID: vm.MachineUID})
	}
	s.cloud.mu.RUnlock()
	return driver.PageOf(list, req), nil
}

// GetVolumeIDs returns the volume handles of the sim's CSI volumes and
// leaves out every other kind of volume.
func (s *Sim) GetVolumeIDs(ctx context.Context, req *driver.GetVolumeIDsRequest) (*driver.GetVolumeIDsResponse, error) {
	if req == nil {
		return nil, driver.Errorf(driver.InvalidArgument, "request: must be set")
	}
	if s.cloud.Outage() {
		return nil, driver.Errorf(driver.Unavailable, "the sim cloud is in an outage (switched on through its admin endpoint); try again later")
	}
	if err := ctx.Err(); err != nil {
		return nil, ctxError(err)
	}
	ids := []string{}
	for i, spec := range req.PVSpecs {
		if spec == nil {
			return nil, driver.Errorf(driver.InvalidArgument, "pvSpecs[%d]: must not be null", i)
		}
		csi := spec.CSI
		if csi == nil || csi.Driver != CSIDriverName {
			continue
		}
		if csi.VolumeHandle == "" {
			return nil, driver.Errorf(driver.InvalidArgument, "pvSpecs[%d].csi.volumeHandle: must not be empty for driver %s", i, CSIDriverName)
		}
		ids = append(ids, csi.VolumeHandle)
	}
	return &driver.GetVolumeIDsResponse{VolumeIDs: ids}, nil
}

// UpdateMachine applies the class's providerSpec to the running VM, as a
// cloud can: tags three ways (tags the last applied providerSpec had and
// the class dropped are removed, tags someone else put on the VM are
// kept); bootDelay, bootJitter, requireInitialization and faults only
// matter to new VMs or to the simulation and are taken as they are. What
// a running VM cannot take is refused with FailedPrecondition before
// anything changes, so the Machine is replaced instead: another region,
// a zone list without the VM's zone, another image, another instance type
// (a resize changes the Node's capacity, which the sim's "kubelet"
// reports only at registration). The class may be another one than the
// VM's (an in-place update): the VM then belongs to it. The providerSpec
// is recorded as applied.
func (s *Sim) UpdateMachine(ctx context.Context, req *driver.UpdateMachineRequest) (*driver.UpdateMachineResponse, error) {
	if req == nil {
		return nil, driver.Errorf(driver.InvalidArgument, "request: must be set")
	}
	c, err := s.begin(ctx, req.Machine, req.MachineClass, true)
	if err != nil {
		return nil, err
	}
	v, err := s.fault(ctx, c.spec, opUpdate, c.key)
	if err != nil {
		return nil, err
	}
	if v.err != nil && !v.afterEffect {
		return nil, v.err
	}
	// The last applied spec only tells which tags the class owned; one that
	// no longer decodes owned none.
	var lastTags map[string]string
	if last, _, err := parseProviderSpec(req.LastAppliedProviderSpec.Raw); err == nil {
		lastTags = last.Tags
	}
	s.cloud.mu.Lock()
	vm := s.cloud.vmByProviderIDLocked(req.ProviderID)
	if req.ProviderID == "" {
		vm = s.cloud.targetLocked(c.machine)
	}
	if vm != nil && machineKey(vm.Namespace, vm.MachineName) != c.key {
		s.cloud.mu.Unlock()
		return nil, driver.Errorf(driver.InvalidArgument, "VM %s belongs to Machine %s/%s, not %s", req.ProviderID, vm.Namespace, vm.MachineName, c.key)
	}
	if vm != nil {
		if why := notInPlace(vm, c.spec); why != "" {
			s.cloud.mu.Unlock()
			return nil, driver.Errorf(driver.FailedPrecondition, "VM %s cannot take MachineClass %s while it runs: %s; replace the Machine", vm.ID, c.class.Name, why)
		}
		tags := cloneMap(vm.Tags)
		if tags == nil {
			tags = map[string]string{}
		}
		for k := range lastTags {
			if _, keep := c.spec.tags[k]; !keep {
				delete(tags, k)
			}
		}
		for k, val := range c.spec.tags {
			tags[k] = val
		}
		vm.Tags = cloneMap(tags)
		s.cloud.moveClassLocked(vm, c.class.Name)
		vm.AppliedProviderSpec = compactJSON(c.class.Spec.ProviderSpec.Raw)
		vm.Updates++
	}
	s.cloud.mu.Unlock()
	if vm == nil {
		return nil, driver.Errorf(driver.NotFound, "Machine %s has no VM %s to update", c.key, req.ProviderID)
	}
	s.cloud.dirty()
	if v.err != nil {
		return nil, v.err
	}
	return &driver.UpdateMachineResponse{}, nil
}

// notInPlace says which change of spec a running vm cannot take, or "".
func notInPlace(vm *VM, spec *classSpec) string {
	switch {
	case spec.region != vm.Region:
		return fmt.Sprintf("providerSpec.region: the VM runs in region %s, not %s", vm.Region, spec.region)
	case !slices.Contains(spec.zones, vm.Zone):
		return fmt.Sprintf("providerSpec.zones: the VM runs in zone %s, which is not one of %s", vm.Zone, strings.Join(spec.zones, ", "))
	case spec.image != vm.Image:
		return fmt.Sprintf("providerSpec.image: the VM booted from %s, not %s", brief.OrNone(vm.Image), brief.OrNone(spec.image))
	case spec.instanceType.Name != vm.InstanceType:
		return fmt.Sprintf("providerSpec.instanceType: the VM is a %s, not a %s", vm.InstanceType, spec.instanceType.Name)
	}
	return ""
}

// GetPluginInfo names the driver and lists every optional method: the sim
// implements them all. It answers even during an outage, as it describes
// the driver, not the cloud.
func (s *Sim) GetPluginInfo(context.Context, *driver.GetPluginInfoRequest) (*driver.GetPluginInfoResponse, error) {
	return &driver.GetPluginInfoResponse{
		Name:       s.name,
		Version:    Version,
		Implements: slices.Clone(driver.OptionalMethods),
	}, nil
}

// targetLocked is the VM a call about the Machine acts on: the one its
// providerID or lastKnownState names, else the oldest that claims it.
func (c *Cloud) targetLocked(m *v1alpha1.Machine) *VM {
	key := machineKey(m.Namespace, m.Name)
	ids := c.byMachine[key]
	if len(ids) == 0 {
		return nil
	}
	for _, hint := range []string{idFromProviderID(m.Spec.ProviderID), decodeState(m.Status.LastKnownState).VM} {
		if hint != "" && slices.Contains(ids, hint) {
			return c.vms[hint]
		}
	}
	return c.vms[ids[0]]
}

func (c *Cloud) vmByProviderIDLocked(providerID string) *VM {
	id := idFromProviderID(providerID)
	if id == "" {
		return nil
	}
	vm := c.vms[id]
	if vm == nil || vm.ProviderID != providerID {
		return nil
	}
	return vm
}

// idFromProviderID returns the VM ID of a sim providerID
// (sim://region/zone/vm-id), or "".
func idFromProviderID(providerID string) string {
	rest, ok := strings.CutPrefix(providerID, "sim://")
	if !ok {
		return ""
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return ""
	}
	return parts[2]
}

func addresses(vm *VM) []v1alpha1.MachineAddress {
	return []v1alpha1.MachineAddress{
		{Type: v1alpha1.MachineInternalIP, Address: vm.InternalIP},
		{Type: v1alpha1.MachineHostName, Address: vm.NodeName},
	}
}

func userDataHash(secret *corev1.Secret) string {
	if secret == nil || len(secret.Data["userData"]) == 0 {
		return ""
	}
	sum := sha256.Sum256(secret.Data["userData"])
	return hex.EncodeToString(sum[:])
}
