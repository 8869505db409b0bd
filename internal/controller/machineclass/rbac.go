package machineclass

// The MachineClass controller's permissions, for `make generate` to collect
// into config/rbac/role.yaml. Classes are read and watched, patched (the
// finalizer) and their status patched; the Machines, MachineSets and
// MachineDeployments that use them are only read (through the cache).
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machineclasses,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machineclasses/status,verbs=patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines;machinesets;machinedeployments,verbs=get;list;watch
//
// Events on classes whose deletion waits (events.k8s.io/v1: created, then
// patched as a series).
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
