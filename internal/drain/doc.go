// Package drain cordons a Node and drains its pods as a sequence of short,
// non-blocking steps.
//
// The machine controller calls Step once per reconcile. A Step lists the
// Node's pods once, starts what can start now (evictions, deletions), records
// its progress in the Machine's DrainStatus and returns at once with the time
// to look again: a reconcile never sleeps or waits for a pod to terminate, so
// a restarted manager resumes the drain from the status where the old one
// stopped.
//
// The rules follow machine-controller-manager's drain:
//
//   - DaemonSet pods and mirror (static) pods stay: their controllers would
//     put them straight back, and the Node is deleted with them anyway.
//   - Pods that finished (Succeeded or Failed) count as gone.
//   - Pods without persistent volumes are evicted in parallel through the
//     Eviction API, so PodDisruptionBudgets are honoured. A pod whose
//     eviction a budget keeps refusing is deleted once the refused rounds
//     exceed Options.MaxEvictRetries.
//   - Pods with persistent volumes are evicted one at a time: after each
//     eviction the drain waits until the pod is gone and its volumes have
//     left node.status.volumesAttached (or Options.VolumeDetachTimeout
//     passes), because clouds detach and reattach disks serially anyway and
//     a serial drain keeps more of a stateful workload available.
//   - A forced drain deletes every remaining pod with grace period 0,
//     waits for no volumes, and deletes the Node's VolumeAttachments, so
//     the volumes are detached now rather than after the attach-detach
//     controller's wait for an unmount the unreachable kubelet never does.
package drain
