package machinedeployment

// The MachineDeployment controller's permissions, for `make generate` to
// collect into config/rbac/role.yaml. Each rule lists only the verbs the
// code uses; reads through the manager's cache need get, list and watch.
//
// Deployments are patched (revision annotations, spec.rollbackTo cleared).
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedeployments,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedeployments/status,verbs=patch
//
// MachineSets are created per template revision, patched (scaled, adopted,
// released, in-place template fields) and deleted beyond the history limit.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinesets,verbs=get;list;watch;create;patch;delete
//
// Machines are counted, and patched by an in-place update (the target
// annotation; the delete mark of a refused one); MachineClasses give the
// capacity annotations.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machineclasses,verbs=get;list;watch
//
// Nodes (of the target cluster) are read for a Manual in-place update's
// selection label.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
//
// The MachineSets' owner reference to their deployment has
// blockOwnerDeletion, which the OwnerReferencesPermissionEnforcement
// admission plugin (on in some clusters) allows only to who may update the
// owner's finalizers.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedeployments/finalizers,verbs=update
//
// MachineDisruptionBudgets are read (watched: a recount may free a waiting
// in-place start) and their status patched to record a grant; a Machine
// held back gets its DisruptionAllowed condition (internal/disruption).
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedisruptionbudgets/status,verbs=patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines/status,verbs=patch
//
// Events on MachineDeployments (events.k8s.io/v1: created, then patched as a series).
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// A provider template's status.capacity feeds the scale-from-zero
// annotations; the provider CRD's contract label says which version to read.
// +kubebuilder:rbac:groups=infrastructure.millwright.dev,resources=simmachinetemplates,verbs=get
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
