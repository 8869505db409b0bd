package machinehealthcheck

// The health check controller's permissions, for `make generate` to
// collect into config/rbac/role.yaml. Reads through the manager's cache
// need get, list and watch.
//
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinehealthchecks,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinehealthchecks/status,verbs=patch
//
// Machines are read, and their HealthCheckSucceeded and OwnerRemediated
// conditions patched; Nodes (target cluster) are read for their conditions.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
//
// Events on health checks (events.k8s.io/v1: created, then patched as a series).
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// External remediation templates and objects are of kinds Millwright does
// not know: the provider of a remediation kind ships a ClusterRole granting
// get on its templates and get, create and delete on its objects, bound to
// the manager's ServiceAccount (docs/health-checks.md).
//
// MachineDisruptionBudgets are read (watched: a recount may free a waiting
// remediation) and granted from (status patch), and waiting Machines get a
// DisruptionAllowed condition and an Event (internal/disruption).
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedisruptionbudgets,verbs=get;list;watch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedisruptionbudgets/status,verbs=patch
