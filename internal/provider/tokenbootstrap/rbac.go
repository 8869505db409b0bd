package tokenbootstrap

// The TokenBootstrapConfig controller runs in millwright-manager
// (--token-bootstrap-provider), so its permissions join the ClusterRole
// millwright-manager that `make generate` collects into
// config/rbac/role.yaml. Each rule lists only the verbs the code uses.
//
// Configs are read and watched through the cache, patched (finalizer) and
// their status patched; Machines are watched for their nodeRef and the
// paused annotation.
// +kubebuilder:rbac:groups=bootstrap.millwright.dev,resources=tokenbootstrapconfigs,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=bootstrap.millwright.dev,resources=tokenbootstrapconfigs/status,verbs=patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines,verbs=get;list;watch
//
// User-data Secrets are read by name without a cache (no list or watch: the
// manager never holds every Secret) and created once, in the config's
// namespace, which may be any. Never updated, patched or deleted (the
// garbage collector deletes them with their config): the manager may not
// change or remove a Secret outside kube-system.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create
//
// Bootstrap tokens live in the target cluster's kube-system only: created,
// patched (a later expiration) and deleted there, through the Role the
// machine controller's driver-path tokens use.
// +kubebuilder:rbac:groups="",namespace=kube-system,roleName=millwright-manager-bootstrap-tokens,resources=secrets,verbs=create;patch;delete
//
// Events on configs (events.k8s.io/v1: created, then patched as a series).
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
