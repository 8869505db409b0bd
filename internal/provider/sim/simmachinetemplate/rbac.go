package simmachinetemplate

// The SimMachineTemplate controller runs in millwright-sim next to the
// SimMachine controller (--infra-controller), so its permissions join the
// ClusterRole millwright-sim that `make generate` collects into
// config/rbac/role.yaml. Each rule lists only the verbs the code uses: it
// reads SimMachineTemplates through the cache (get, list, watch) and
// patches their status; it never changes their spec or metadata. Events
// on a template whose providerSpec the sim refuses need events create and
// patch, which the SimMachine controller's markers already grant (repeated
// here so the controller's needs are complete on their own).
// +kubebuilder:rbac:groups=infrastructure.millwright.dev,roleName=millwright-sim,resources=simmachinetemplates,verbs=get;list;watch
// +kubebuilder:rbac:groups=infrastructure.millwright.dev,roleName=millwright-sim,resources=simmachinetemplates/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,roleName=millwright-sim,resources=events,verbs=create;patch
