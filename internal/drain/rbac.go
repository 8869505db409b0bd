package drain

// A forced drain deletes the Node's VolumeAttachments (see
// deleteVolumeAttachments); the manager lists them through its cache.
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=get;list;watch;delete
