package safety

// The safety controller's permissions, for `make generate` to collect into
// config/rbac/role.yaml. Each rule lists only the verbs the code uses.
//
// Machines are read (orphan collection, overshoot count) and their status
// patched (health timers restarted after an API-server freeze).
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines/status,verbs=patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machineclasses,verbs=get;list;watch
//
// MachineSets and MachineDeployments are labelled frozen and unfrozen.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinesets;machinedeployments,verbs=get;list;watch;patch
//
// A class's Secrets are read by name, without a cache, for ListMachines
// and DeleteMachine.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
//
// Nodes no Machine owns are annotated, never deleted.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch
//
// Events report collected VMs, freezes and unmanaged Nodes.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// The API-server probe reads /readyz.
// +kubebuilder:rbac:urls=/readyz,verbs=get
