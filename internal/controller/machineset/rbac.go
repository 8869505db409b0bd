package machineset

// The MachineSet controller's permissions, for `make generate` to collect
// into config/rbac/role.yaml. Each rule lists only the verbs the code uses;
// reads through the manager's cache need get, list and watch.
//
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinesets,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinesets/status,verbs=patch
//
// Machines are created from the template, patched (adopted, released, the
// template's in-place fields propagated) and deleted to scale down.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines,verbs=get;list;watch;create;patch;delete
//
// The Machines' owner reference to their set has blockOwnerDeletion, which
// the OwnerReferencesPermissionEnforcement admission plugin (on in some
// clusters) allows only to who may update the owner's finalizers.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinesets/finalizers,verbs=update
//
// MachineDisruptionBudgets are read (watched: a recount may free a waiting
// deletion) and their status patched to record a grant; a victim gets its
// DisruptionAllowed condition and an Event (internal/disruption).
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedisruptionbudgets/status,verbs=patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines/status,verbs=patch
//
// Events on MachineSets (events.k8s.io/v1: created, then patched as a series).
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// Provider templates are read and cloned into per-Machine objects, which
// are deleted again when their Machine cannot be created; the provider
// CRDs are read (metadata) for their contract label.
// +kubebuilder:rbac:groups=infrastructure.millwright.dev,resources=simmachinetemplates,verbs=get
// +kubebuilder:rbac:groups=infrastructure.millwright.dev,resources=simmachines,verbs=create;delete
// +kubebuilder:rbac:groups=bootstrap.millwright.dev,resources=tokenbootstrapconfigtemplates,verbs=get
// +kubebuilder:rbac:groups=bootstrap.millwright.dev,resources=tokenbootstrapconfigs,verbs=create;delete
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
