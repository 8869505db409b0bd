package drain

// The Machine's deletion releases the Node's VolumeAttachments once its VM
// is gone (see ReleaseVolumeAttachments).
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=get;list;watch;delete

// A pod deleted instead of evicted gets the DisruptionTarget condition
// first (see deletePod).
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// An eviction the Eviction API approved but did not finish is carried out
// when the pod's budget lists it (see approvedEviction).
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list
