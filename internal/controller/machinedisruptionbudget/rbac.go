package machinedisruptionbudget

// The budget controller's permissions, and the gate's
// (internal/disruption, run inside the other controllers), for `make
// generate` to collect into config/rbac/role.yaml. Budgets are read and
// their status patched (recounts by this controller, grants by the gate,
// each under the budget's resourceVersion); Machines are read, and the
// gate patches their DisruptionAllowed condition and emits Events on them;
// MachineSets and MachineDeployments are read for their sizes.
//
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedisruptionbudgets/status,verbs=patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines/status,verbs=patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinesets;machinedeployments,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
