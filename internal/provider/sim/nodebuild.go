package sim

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/kwok"
)

// Keys the sim puts on Nodes.
const (
	// KwokNodeAnnotation marks a Node for kwok (its default
	// manageNodesWithAnnotationSelector is kwok.x-k8s.io/node=fake).
	KwokNodeAnnotation = kwok.NodeAnnotation
	// KwokTypeLabel "kwok" is the label kwok's examples select fake Nodes by.
	KwokTypeLabel = "type"
	// KwokNotReadyLabel "true" is what kwok's node-not-ready chaos Stage
	// (kustomize/stage/node/chaos in kwok v0.8.0) matches: while it is on
	// a Running Node, kwok reports the Node Ready=False. The sim sets it on
	// the Nodes of killed and deleted VMs and of Nodes made NotReady.
	KwokNotReadyLabel = kwok.NotReadyLabel
	// kwokNotReadyPrefix starts the annotations that stage reads its delay,
	// reason and message from.
	kwokNotReadyPrefix = "node-not-ready.stage.kwok.x-k8s.io/"
	// VMIDAnnotation on a Node names the sim VM it runs on.
	VMIDAnnotation = "sim.millwright.dev/vm-id"
	// KubeletVersion is what the sim's "kubelets" report.
	KubeletVersion = "v1.36.3-sim"
)

// nodeTemplateFor is what a VM's Node registers with: the class's
// nodeTemplate (labels, taints, capacity) under the labels a kubelet and a
// cloud provider set, plus the uninitialized taint Millwright removes once
// it has synced the Node.
func nodeTemplateFor(vm *VM, cs *classSpec, nt *v1alpha1.NodeTemplate) NodeTemplate {
	t := NodeTemplate{Labels: map[string]string{}, Architecture: cs.instanceType.Architecture}
	capacity := cs.instanceType.Resources()
	var taints []corev1.Taint
	if nt != nil {
		for k, v := range nt.Labels {
			t.Labels[k] = v
		}
		for name, q := range nt.Capacity {
			capacity[name] = q.DeepCopy()
		}
		if nt.Architecture != nil && *nt.Architecture != "" {
			t.Architecture = *nt.Architecture
		}
		taints = nt.Taints
	}
	t.Capacity = capacity
	for k, v := range map[string]string{
		corev1.LabelHostname:           vm.NodeName,
		corev1.LabelOSStable:           "linux",
		corev1.LabelArchStable:         t.Architecture,
		corev1.LabelTopologyRegion:     vm.Region,
		corev1.LabelTopologyZone:       vm.Zone,
		corev1.LabelInstanceTypeStable: vm.InstanceType,
	} {
		t.Labels[k] = v
	}
	t.Taints = []corev1.Taint{{Key: v1alpha1.UninitializedTaintKey, Effect: corev1.TaintEffectNoSchedule}}
	for _, taint := range taints {
		if taint.Key == v1alpha1.UninitializedTaintKey && taint.Effect == corev1.TaintEffectNoSchedule {
			continue
		}
		taint.TimeAdded = nil
		t.Taints = append(t.Taints, taint)
	}
	return t
}

// buildNode is the Node a VM's kubelet registers.
func buildNode(vm *VM, mode NodeMode, now time.Time) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        vm.NodeName,
			Labels:      cloneMap(vm.Node.Labels),
			Annotations: map[string]string{VMIDAnnotation: vm.ID},
		},
		Spec: corev1.NodeSpec{
			ProviderID: vm.ProviderID,
			Taints:     append([]corev1.Taint(nil), vm.Node.Taints...),
		},
		Status: corev1.NodeStatus{
			Capacity:    vm.Node.Capacity.DeepCopy(),
			Allocatable: vm.Node.Capacity.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: vm.InternalIP},
				{Type: corev1.NodeHostName, Address: vm.NodeName},
			},
			NodeInfo: corev1.NodeSystemInfo{
				MachineID:               vm.ID,
				SystemUUID:              vm.ID,
				BootID:                  vm.ID,
				KernelVersion:           "6.12.0-sim",
				OSImage:                 "Millwright sim",
				ContainerRuntimeVersion: "sim://1.0",
				KubeletVersion:          KubeletVersion,
				OperatingSystem:         "linux",
				Architecture:            vm.Node.Architecture,
			},
		},
	}
	if n.Labels == nil {
		n.Labels = map[string]string{}
	}
	switch mode {
	case NodeModeKwok:
		n.Annotations[KwokNodeAnnotation] = "fake"
		n.Labels[KwokTypeLabel] = "kwok"
	case NodeModeBuiltin:
		n.Status.Conditions = kubeletConditions(now)
	}
	return n
}

// kubeletConditions are the conditions of a healthy kubelet's Node.
func kubeletConditions(now time.Time) []corev1.NodeCondition {
	t := metav1.NewTime(now)
	cond := func(typ corev1.NodeConditionType, status corev1.ConditionStatus, reason, msg string) corev1.NodeCondition {
		return corev1.NodeCondition{Type: typ, Status: status, Reason: reason, Message: msg, LastHeartbeatTime: t, LastTransitionTime: t}
	}
	return []corev1.NodeCondition{
		cond(corev1.NodeMemoryPressure, corev1.ConditionFalse, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, corev1.ConditionFalse, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, corev1.ConditionFalse, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
		cond(corev1.NodeReady, corev1.ConditionTrue, "KubeletReady", "kubelet is posting ready status"),
	}
}

// health is how a VM's Node should look.
type health struct {
	ready   bool
	status  corev1.ConditionStatus
	reason  string
	message string
}

var (
	healthy   = health{ready: true, status: corev1.ConditionTrue, reason: "KubeletReady", message: "kubelet is posting ready status"}
	vmStopped = health{status: corev1.ConditionUnknown, reason: "NodeStatusUnknown", message: "Kubelet stopped posting node status: the sim VM was killed."}
	vmDeleted = health{status: corev1.ConditionUnknown, reason: "NodeStatusUnknown", message: "Kubelet stopped posting node status: the sim VM was deleted."}
	notReady  = health{status: corev1.ConditionFalse, reason: "KubeletNotReady", message: "the sim made this Node NotReady (admin endpoint or providerSpec.faults.nodeNotReady)"}
)
