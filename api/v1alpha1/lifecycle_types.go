package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DeletionStep is a step of a Machine's deletion, in the order they run.
// +kubebuilder:validation:Enum=PreDrainHooks;Cordon;Drain;PreTerminateHooks;DeleteInfrastructure;DeleteNode
type DeletionStep string

// The deletion steps, in order.
const (
	// StepPreDrainHooks waits until no pre-drain hook annotation remains.
	StepPreDrainHooks DeletionStep = "PreDrainHooks"
	// StepCordon marks the Node unschedulable.
	StepCordon DeletionStep = "Cordon"
	// StepDrain evicts the Node's pods, honouring disruption budgets.
	StepDrain DeletionStep = "Drain"
	// StepPreTerminateHooks waits until no pre-terminate hook annotation remains.
	StepPreTerminateHooks DeletionStep = "PreTerminateHooks"
	// StepDeleteInfrastructure deletes the VM (or the InfraMachine and bootstrap objects).
	StepDeleteInfrastructure DeletionStep = "DeleteInfrastructure"
	// StepDeleteNode deletes the Node; then the finalizer is removed.
	StepDeleteNode DeletionStep = "DeleteNode"
)

// MachineDeletionStatus records how far a Machine's deletion has got, so a
// restarted manager resumes the same step instead of starting over or
// skipping the drain.
type MachineDeletionStatus struct {
	// Step is the step in progress.
	Step DeletionStep `json:"step"`

	// StepStartTime is when the current step started.
	StepStartTime metav1.Time `json:"stepStartTime"`

	// StartTime is when the deletion started.
	StartTime metav1.Time `json:"startTime"`

	// ForceReason, when set, says why the drain is forced: pods are deleted
	// without eviction and without waiting for volumes (the Node has been
	// unreachable too long, the drain timed out, or a person asked).
	// +optional
	ForceReason string `json:"forceReason,omitempty"`

	// Drain is the progress of the drain.
	// +optional
	Drain *DrainStatus `json:"drain,omitempty"`
}

// DrainStatus is the progress of a drain across reconciles.
type DrainStatus struct {
	// Attempts counts eviction rounds so far. Pods whose eviction a
	// disruption budget still refuses after maxEvictRetries rounds are deleted.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`

	// LastRefusedTime is when an eviction was last refused. The next round
	// waits the retry interval after it, however soon the Machine is
	// looked at again, so the rounds before pods are deleted take their
	// time and a budget has the chance to free up.
	// +optional
	LastRefusedTime *metav1.Time `json:"lastRefusedTime,omitempty"`

	// VolumeWait is the pod with persistent volumes evicted last; the drain
	// waits for its volumes to detach before evicting the next such pod.
	// +optional
	VolumeWait *VolumeWait `json:"volumeWait,omitempty"`

	// Order is the drain order being evicted (MachineDrainRule
	// spec.drain.order; 0 for pods no rule orders). Unset before the first
	// round and once no pod to evict is left.
	// +optional
	Order *int32 `json:"order,omitempty"`

	// BlockingPods are the namespace/name of some of the pods the drain
	// waits for at this point: pods of the current order still on the
	// Node, then pods it waits to complete. At most 10; BlockingPodCount
	// counts them all.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	BlockingPods []string `json:"blockingPods,omitempty"`

	// BlockingPodCount is how many pods the drain waits for at this point.
	// +optional
	BlockingPodCount int32 `json:"blockingPodCount,omitempty"`

	// UnreachableSince is when the Node's cluster stopped answering the
	// drain; unset once it answers again. A forced drain is skipped only
	// after the cluster has been unreachable for the drain timeout in a
	// row, so one failed call during an API server upgrade does not skip
	// it (docs/drain.md).
	// +optional
	UnreachableSince *metav1.Time `json:"unreachableSince,omitempty"`
}

// VolumeWait is a wait for a pod's volumes to detach from the Node.
type VolumeWait struct {
	// Pod is the namespace/name of the evicted pod.
	Pod string `json:"pod"`

	// VolumeIDs still attached when the pod was evicted.
	// +optional
	// +listType=atomic
	VolumeIDs []string `json:"volumeIDs,omitempty"`

	// StartTime is when the wait started; it gives up after the volume
	// detach timeout.
	StartTime metav1.Time `json:"startTime"`
}
