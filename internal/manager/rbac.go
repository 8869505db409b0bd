package manager

// The manager's own permissions, beside its controllers', for `make
// generate` to collect into config/rbac/role.yaml.
//
// Leader election (--leader-elect) holds one Lease, named by
// --leader-elect-id, in the namespace config/manager deploys to: a Role
// there, and get and update only of that Lease (create cannot be limited
// to a name). Deploying to another namespace, or changing the Lease's
// name, means changing these markers (or patching the Role).
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=millwright-system,roleName=millwright-manager-leader-election,resources=leases,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=millwright-system,roleName=millwright-manager-leader-election,resources=leases,resourceNames=millwright-manager.machine.millwright.dev,verbs=get;update
//
// Leader election reports its transitions as core/v1 Events on the Lease.
// +kubebuilder:rbac:groups="",namespace=millwright-system,roleName=millwright-manager-leader-election,resources=events,verbs=create;patch
