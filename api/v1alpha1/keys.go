package v1alpha1

// Every label, annotation, finalizer and taint key Millwright reads or writes,
// one line of meaning each. Keys under the group are Millwright's own; the
// few outside it are fixed by the upstream cluster-autoscaler and are kept
// verbatim so that it works with Millwright unchanged.
const (
	// GroupName is the API group of Millwright's kinds and the prefix of its keys.
	GroupName = "machine.millwright.dev"

	// MachineFinalizer holds a Machine until its VM and its Node are gone.
	MachineFinalizer = GroupName + "/machine"
	// MachineClassFinalizer holds a MachineClass while Machines, MachineSets
	// or MachineDeployments use it: without it no VM of its Machines could be deleted.
	MachineClassFinalizer = GroupName + "/machineclass"

	// MachineSetNameLabel on a Machine names the MachineSet that created it.
	MachineSetNameLabel = GroupName + "/set-name"
	// MachineDeploymentNameLabel on a MachineSet or Machine names its MachineDeployment.
	MachineDeploymentNameLabel = GroupName + "/deployment-name"
	// TemplateHashLabel carries the hash of the template a MachineSet and its Machines were made from.
	TemplateHashLabel = GroupName + "/template-hash"
	// RevisionAnnotation on a MachineSet is the MachineDeployment revision it belongs to.
	RevisionAnnotation = GroupName + "/revision"
	// DesiredReplicasAnnotation on a MachineSet is its deployment's replicas when it was last scaled (rollout bookkeeping).
	DesiredReplicasAnnotation = GroupName + "/desired-replicas"
	// MaxReplicasAnnotation on a MachineSet is its deployment's replicas + maxSurge when last scaled: the base of proportional scaling.
	MaxReplicasAnnotation = GroupName + "/max-replicas"
	// RolloutAfterAnnotation on a MachineSet is the deployment's spec.rolloutAfter (RFC 3339) that had passed when the set was created: the restart the set answers.
	RolloutAfterAnnotation = GroupName + "/rollout-after"
	// SupersededAtAnnotation on an OnDelete deployment's MachineSet is when it stopped being the newest.
	SupersededAtAnnotation = GroupName + "/superseded-at"

	// DeleteMachineAnnotation marks a Machine to be removed first on scale-down (set by the cluster-autoscaler).
	DeleteMachineAnnotation = GroupName + "/delete-machine"
	// PriorityAnnotation orders scale-down victims: lower goes first; absent means 3.
	PriorityAnnotation = GroupName + "/priority"
	// ForceDeletionAnnotation "true" on a Machine skips the graceful drain when it is deleted.
	ForceDeletionAnnotation = GroupName + "/force-deletion"
	// DrainLabel on a pod overrides every MachineDrainRule: DrainLabelSkip or DrainLabelWaitCompleted (docs/drain.md).
	DrainLabel = GroupName + "/drain"
	// DrainLabelSkip as DrainLabel's value leaves the pod on the Node during a drain.
	DrainLabelSkip = "skip"
	// DrainLabelWaitCompleted as DrainLabel's value makes the drain wait for the pod to finish, never evicting it.
	DrainLabelWaitCompleted = "wait-completed"
	// PausedAnnotation on a Machine stops its reconciliation until removed.
	PausedAnnotation = GroupName + "/paused"
	// SkipRemediationAnnotation on a Machine keeps every MachineHealthCheck from remediating it (it is still judged).
	SkipRemediationAnnotation = GroupName + "/skip-remediation"
	// PreDrainHookAnnotationPrefix: any annotation with this prefix blocks the drain until removed.
	PreDrainHookAnnotationPrefix = "pre-drain.delete.hook." + GroupName + "/"
	// PreTerminateHookAnnotationPrefix: any annotation with this prefix blocks VM deletion until removed.
	PreTerminateHookAnnotationPrefix = "pre-terminate.delete.hook." + GroupName + "/"
	// PreserveAnnotation on a Machine or its Node asks to keep the Machine
	// (docs/preservation.md): PreserveNow, PreserveWhenFailed or PreserveNever.
	PreserveAnnotation = GroupName + "/preserve"
	// AutoPreservedAnnotation "true" on a failed Machine is set by its
	// MachineSet when it keeps it under spec.autoPreserveFailedMax.
	AutoPreservedAnnotation = GroupName + "/auto-preserved"
	// LastAppliedProviderSpecAnnotation on a Machine is the class providerSpec (JSON) last applied to its VM, for hot updates.
	LastAppliedProviderSpecAnnotation = GroupName + "/last-applied-providerspec"

	// FrozenLabel on a MachineSet or MachineDeployment is set by the safety controller: no scale-up while present.
	FrozenLabel = GroupName + "/frozen"
	// UnfreezeAnnotation set by a person lifts a safety freeze.
	UnfreezeAnnotation = GroupName + "/unfreeze"

	// ClonedFromNameAnnotation on a cloned InfraMachine or bootstrap config names its template.
	ClonedFromNameAnnotation = GroupName + "/cloned-from-name"
	// ClonedFromGroupKindAnnotation on a cloned object is the group and kind of its template.
	ClonedFromGroupKindAnnotation = GroupName + "/cloned-from-groupkind"
	// ContractLabelPrefix + a contract version (e.g. "v1beta1") on a provider CRD lists the CRD versions honouring it.
	ContractLabelPrefix = GroupName + "/"
	// ContractVersion is the InfraMachine/bootstrap contract this Millwright speaks (docs/contract-providers.md).
	ContractVersion = "v1beta1"
	// ContractLabel on a provider CRD is "_"-separated CRD versions honouring ContractVersion; the last is used.
	ContractLabel = ContractLabelPrefix + ContractVersion

	// NodeMachineAnnotation on a Node names its Machine (read by the cluster-autoscaler).
	NodeMachineAnnotation = GroupName + "/machine"
	// NodeClusterNamespaceAnnotation on a Node is its Machine's namespace (read by the cluster-autoscaler).
	NodeClusterNamespaceAnnotation = GroupName + "/cluster-namespace"
	// NodeClusterNameAnnotation on a Node is its Machine's spec.clusterName (read by the cluster-autoscaler).
	NodeClusterNameAnnotation = GroupName + "/cluster-name"
	// NodeLastAppliedTemplateAnnotation on a Node records what Millwright applied, for the three-way merge.
	NodeLastAppliedTemplateAnnotation = GroupName + "/last-applied-node-template"
	// NodeTriggerDeletionAnnotation "true" on a Node makes Millwright delete and replace its Machine.
	NodeTriggerDeletionAnnotation = GroupName + "/trigger-deletion"
	// NodeNotManagedAnnotation marks a Node that no Machine owns (set by the safety controller; never deleted).
	NodeNotManagedAnnotation = GroupName + "/not-managed"
	// PreservedTaintKey is the NoSchedule taint on a preserved Machine's Node: nothing new lands there.
	PreservedTaintKey = GroupName + "/preserved"
	// NodePreservedChangesAnnotation on a preserved Machine's Node lists, comma-separated, what
	// preservation changed there besides its taint (NodeChangeCordon, NodeChangeScaleDownDisabled),
	// so that ending it undoes only those and never another controller's cordon or annotation.
	NodePreservedChangesAnnotation = GroupName + "/preserved-changes"
	// UninitializedTaintKey is a NoSchedule taint a Node registers with; removed once its labels and taints are synced.
	UninitializedTaintKey = GroupName + "/uninitialized"

	// AutoscalerMinSizeAnnotation on a MachineSet or MachineDeployment is the autoscaler's lower bound.
	AutoscalerMinSizeAnnotation = GroupName + "/cluster-api-autoscaler-node-group-min-size"
	// AutoscalerMaxSizeAnnotation on a MachineSet or MachineDeployment is the autoscaler's upper bound.
	AutoscalerMaxSizeAnnotation = GroupName + "/cluster-api-autoscaler-node-group-max-size"

	// AutoscalerCapacityPrefix starts the scale-from-zero annotations the autoscaler reads (fixed upstream).
	AutoscalerCapacityPrefix = "capacity.cluster-autoscaler.kubernetes.io/"
	// AutoscalerCapacityCPU is the CPU of one node of the group.
	AutoscalerCapacityCPU = AutoscalerCapacityPrefix + "cpu"
	// AutoscalerCapacityMemory is the memory of one node of the group.
	AutoscalerCapacityMemory = AutoscalerCapacityPrefix + "memory"
	// AutoscalerCapacityEphemeralDisk is the ephemeral storage of one node of the group.
	AutoscalerCapacityEphemeralDisk = AutoscalerCapacityPrefix + "ephemeral-disk"
	// AutoscalerCapacityMaxPods is the pod capacity of one node of the group.
	AutoscalerCapacityMaxPods = AutoscalerCapacityPrefix + "maxPods"
	// AutoscalerCapacityGPUCount is the GPU count of one node of the group.
	AutoscalerCapacityGPUCount = AutoscalerCapacityPrefix + "gpu-count"
	// AutoscalerCapacityGPUType is the GPU type of one node of the group.
	AutoscalerCapacityGPUType = AutoscalerCapacityPrefix + "gpu-type"
	// AutoscalerCapacityLabels is "k=v,k=v": the labels one node of the group will carry.
	AutoscalerCapacityLabels = AutoscalerCapacityPrefix + "labels"
	// AutoscalerCapacityTaints is "k=v:Effect,…": the taints one node of the group will carry.
	AutoscalerCapacityTaints = AutoscalerCapacityPrefix + "taints"

	// AutoscalerScaleDownDisabledAnnotation "true" on a Node keeps the cluster-autoscaler from removing it (fixed upstream).
	AutoscalerScaleDownDisabledAnnotation = "cluster-autoscaler.kubernetes.io/scale-down-disabled"

	// AutoscalerDeploymentNameLabel on a MachineSet names its MachineDeployment; the autoscaler reads this fixed key.
	AutoscalerDeploymentNameLabel = "cluster.x-k8s.io/deployment-name"
	// AutoscalerRevisionAnnotation on a MachineSet is its revision; the autoscaler reads this fixed key to avoid scaling down mid-rollout.
	AutoscalerRevisionAnnotation = "machinedeployment.clusters.x-k8s.io/revision"
)

// The values of PreserveAnnotation.
const (
	// PreserveNow keeps the Machine, Running or not, until the annotation
	// goes or the preserve timeout ends.
	PreserveNow = "now"
	// PreserveWhenFailed keeps the Machine once it fails, until the
	// annotation goes or the preserve timeout ends.
	PreserveWhenFailed = "when-failed"
	// PreserveNever keeps the Machine from being preserved, even
	// automatically (spec.autoPreserveFailedMax).
	PreserveNever = "false"
)

// The values listed in NodePreservedChangesAnnotation.
const (
	// NodeChangeCordon: preservation cordoned the Node.
	NodeChangeCordon = "cordon"
	// NodeChangeScaleDownDisabled: preservation set AutoscalerScaleDownDisabledAnnotation.
	NodeChangeScaleDownDisabled = "scale-down-disabled"
)

// In-place updates (docs/in-place-updates.md). A MachineDeployment with
// strategy InPlace changes its Machines without replacing them: the
// MachineDeployment controller picks a Machine, the machine controller
// cordons and drains its Node, has the driver and/or the node agent apply
// the new template, then moves the Machine to the new MachineSet.
const (
	// InPlaceTargetAnnotation on a Machine names the MachineSet whose
	// template the Machine is being updated to in place (set by the
	// MachineDeployment controller; the machine controller removes it when
	// it moves the Machine into that set, or when the update is abandoned).
	InPlaceTargetAnnotation = GroupName + "/in-place-target"
	// InPlaceMovingOutAnnotation on a MachineSet lists, comma-separated and
	// sorted, its Machines being updated in place into another set: the
	// set neither counts them nor picks them to delete. Written in the same
	// patch as the set's replicas, so a set's count is never off by a
	// Machine in transit.
	InPlaceMovingOutAnnotation = GroupName + "/in-place-moving-out"
	// InPlaceMovingInAnnotation on a MachineSet lists, comma-separated and
	// sorted, Machines of another set being updated in place into this
	// one: the set counts them as its own (not available until updated)
	// and never creates a Machine in their place.
	InPlaceMovingInAnnotation = GroupName + "/in-place-moving-in"
	// UpdateSelectedLabel "true" on a Machine or on its Node selects it for
	// a Manual in-place update (strategy.inPlace.orchestration Manual).
	UpdateSelectedLabel = GroupName + "/update-selected"

	// NodeUpdateLabel on a Node hands a node-side in-place update to its
	// node agent. Millwright sets NodeUpdateReady together with
	// NodeUpdateVersionLabel; the agent answers NodeUpdateInProgress, then
	// NodeUpdateSucceeded (once it runs the version and reports it as its
	// kubeletVersion) or NodeUpdateFailed (with NodeUpdateMessageAnnotation).
	// Millwright removes the three keys when the Machine has moved.
	NodeUpdateLabel = GroupName + "/update"
	// NodeUpdateVersionLabel on a Node is the Kubernetes version (spec.version
	// of the target template, e.g. v1.36.4) its agent is asked to run.
	NodeUpdateVersionLabel = GroupName + "/update-version"
	// NodeUpdateMessageAnnotation on a Node is the agent's reason for a
	// failed update, for people.
	NodeUpdateMessageAnnotation = GroupName + "/update-message"
	// NodeInPlaceCordonAnnotation "true" on a Node says the machine
	// controller cordoned it for an in-place update: only then does it
	// uncordon the Node when the update ends, so a cordon someone else set
	// before is never undone.
	NodeInPlaceCordonAnnotation = GroupName + "/in-place-cordoned"
)

// The values of NodeUpdateLabel.
const (
	// NodeUpdateReady: Millwright has drained the Node; the agent may apply the update.
	NodeUpdateReady = "ready"
	// NodeUpdateInProgress: the agent has taken the update and is applying it (e.g. rebooting).
	NodeUpdateInProgress = "in-progress"
	// NodeUpdateSucceeded: the agent runs the target version.
	NodeUpdateSucceeded = "succeeded"
	// NodeUpdateFailed: the agent could not apply the update; NodeUpdateMessageAnnotation says why.
	NodeUpdateFailed = "failed"
)
