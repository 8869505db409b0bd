package simserver

// millwright-sim's permissions, a ClusterRole of its own (millwright-sim)
// for `make generate` to collect into config/rbac/role.yaml. A manager
// running the sim in process (--driver NAME=in-process:sim) needs it too.
//
// The sim registers its VMs' Nodes as a kubelet would, reads them from an
// informer's cache (millwright-sim; in process, by name without one), and
// patches them: the label kwok's not-ready stage matches (--node-mode
// kwok), or the Ready condition in the status (--node-mode builtin). It
// never updates nor deletes Nodes.
// +kubebuilder:rbac:groups="",roleName=millwright-sim,resources=nodes,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",roleName=millwright-sim,resources=nodes/status,verbs=patch
