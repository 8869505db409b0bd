package simmachine

// The SimMachine controller runs in millwright-sim (--infra-controller), so
// its permissions join the ClusterRole millwright-sim that `make generate`
// collects into config/rbac/role.yaml. Each rule lists only the verbs the
// code uses: it patches SimMachines (finalizer, spec.providerID) and their
// status, watches Machines for the bootstrap data and the paused
// annotation, and reads bootstrap Secrets by name without a cache.
// +kubebuilder:rbac:groups=infrastructure.millwright.dev,roleName=millwright-sim,resources=simmachines,verbs=get;list;watch;patch
// +kubebuilder:rbac:groups=infrastructure.millwright.dev,roleName=millwright-sim,resources=simmachines/status,verbs=patch
// +kubebuilder:rbac:groups=machine.millwright.dev,roleName=millwright-sim,resources=machines,verbs=get;list;watch
// +kubebuilder:rbac:groups="",roleName=millwright-sim,resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,roleName=millwright-sim,resources=events,verbs=create;patch
