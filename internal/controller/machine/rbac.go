package machine

// The machine controller's permissions, for `make generate` to collect into
// config/rbac/role.yaml. Each rule lists only the verbs the code uses;
// reads through the manager's cache (Get and List of Machines, Classes,
// Sets, Deployments and Nodes) need get, list and watch.
//
// Machines: read and watched; patched (finalizer, providerID, annotations)
// and deleted (a Node annotated for replacement), never updated.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machines/status,verbs=patch
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machineclasses,verbs=get;list;watch
//
// The owning MachineSet or MachineDeployment is read for its
// maxConcurrentReplacements.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinesets;machinedeployments,verbs=get;list;watch
//
// MachineHealthChecks are read (cached) to know whether one judges a
// Machine instead of its own health rules.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinehealthchecks,verbs=get;list;watch
//
// Secrets are only ever read by name, without a cache (APIReader): the
// class's secretRef and credentialsSecretRef (of the class's namespace
// only: classsecret refuses others), and spec.bootstrap.dataSecretName. No list or watch: the manager never
// holds every Secret of the cluster. The same get reads a bootstrap token
// back from kube-system.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
//
// Bootstrap token Secrets are created, and deleted once the Node joined,
// only in kube-system: a Role there, not a cluster-wide rule.
// +kubebuilder:rbac:groups="",namespace=kube-system,roleName=millwright-manager-bootstrap-tokens,resources=secrets,verbs=create;delete
//
// Nodes: watched (target cache), patched (labels, taints, the cordon),
// deleted after the VM. Never created (the kubelet or the driver does that)
// nor updated.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;delete
//
// The drain (internal/drain) lists a Node's pods without a cache (the API
// server filters by spec.nodeName), evicts them, and deletes those whose
// eviction a budget refused too long or whose drain is forced. It reads the
// claims and volumes of evicted pods to wait for their detach.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;delete
// +kubebuilder:rbac:groups="",resources=pods/eviction,verbs=create
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims;persistentvolumes,verbs=get
//
// The drain reads the MachineDrainRules of the Machine's namespace (cache)
// and, when a rule selects pods by namespace labels, lists the target
// cluster's namespaces without a cache.
// +kubebuilder:rbac:groups=machine.millwright.dev,resources=machinedrainrules,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=list
//
// Events on Machines (events.k8s.io/v1: created, then patched as a series).
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
//
// Contract providers' objects (InfraMachines, bootstrap configs) are read
// and watched through the cache, patched (the Machine becomes their
// controller owner) and deleted with the Machine. Millwright's own
// providers are listed here; another provider ships a ClusterRole granting
// the same verbs on its kinds, bound to the manager's ServiceAccount
// (docs/contract-providers.md).
// +kubebuilder:rbac:groups=infrastructure.millwright.dev,resources=simmachines,verbs=get;list;watch;patch;delete
// +kubebuilder:rbac:groups=bootstrap.millwright.dev,resources=tokenbootstrapconfigs,verbs=get;list;watch;patch;delete
//
// Provider CRDs are read (metadata only, cached) for their contract label.
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get;list;watch
