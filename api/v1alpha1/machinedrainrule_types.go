package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DrainBehavior is what the drain of a Machine's Node does with a pod.
// +kubebuilder:validation:Enum=Drain;Skip;WaitCompleted
type DrainBehavior string

// The drain behaviors (docs/drain.md).
const (
	// DrainBehaviorDrain evicts the pod, after every pod of a lower order is gone.
	DrainBehaviorDrain DrainBehavior = "Drain"
	// DrainBehaviorSkip leaves the pod on the Node; it goes with the Node.
	DrainBehaviorSkip DrainBehavior = "Skip"
	// DrainBehaviorWaitCompleted never evicts the pod: the drain waits until
	// it has finished (Succeeded or Failed) or was deleted by someone else.
	DrainBehaviorWaitCompleted DrainBehavior = "WaitCompleted"
)

// MachineDrainRuleDrainConfig is what a rule does with the pods it selects.
//
// +kubebuilder:validation:XValidation:rule="!has(self.order) || self.behavior == 'Drain'",message="spec.drain.order may only be set when spec.drain.behavior is Drain"
type MachineDrainRuleDrainConfig struct {
	// Behavior is Drain (evict, in order), Skip (leave the pod) or
	// WaitCompleted (wait for the pod to finish, never evict it).
	Behavior DrainBehavior `json:"behavior"`

	// Order, with behavior Drain, is when the pods are evicted: lower orders
	// first, and an order starts only when every pod of the lower orders is
	// gone. Pods no rule selects have order 0; negative orders go before them.
	// +optional
	Order *int32 `json:"order,omitempty"`
}

// MachineDrainRuleMachineSelector selects Machines by their labels.
type MachineDrainRuleMachineSelector struct {
	// Selector over the Machine's labels; empty selects every Machine of
	// the rule's namespace.
	// +optional
	Selector *LabelSelector `json:"selector,omitempty"`
}

// MachineDrainRulePodSelector selects pods by their labels and their
// namespace's labels; both must match.
type MachineDrainRulePodSelector struct {
	// Selector over the pod's labels; empty selects every pod.
	// +optional
	Selector *LabelSelector `json:"selector,omitempty"`

	// NamespaceSelector over the labels of the pod's namespace (in the
	// cluster of the Node); empty selects every namespace.
	// +optional
	NamespaceSelector *LabelSelector `json:"namespaceSelector,omitempty"`
}

// MachineDrainRuleSpec selects Machines and pods and says how the drain
// treats those pods on those Machines' Nodes.
type MachineDrainRuleSpec struct {
	// Drain is what the drain does with the selected pods.
	Drain MachineDrainRuleDrainConfig `json:"drain"`

	// Machines the rule applies to, as alternatives: a Machine matching any
	// entry. Empty: every Machine of the rule's namespace. At most 4, so
	// that the API server can check every selector within its validation
	// cost budget; more alternatives are more rules.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	Machines []MachineDrainRuleMachineSelector `json:"machines,omitempty"`

	// Pods the rule applies to, as alternatives: a pod matching any entry.
	// Empty: every pod. DaemonSet and mirror pods always stay, whatever the
	// rules. At most 4, like machines.
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=4
	Pods []MachineDrainRulePodSelector `json:"pods,omitempty"`
}

// MachineDrainRule says how the drain of the selected Machines' Nodes
// treats the selected pods: evict them in an order, skip them, or wait for
// them to complete. It applies to the Machines of its own namespace. When
// several rules select one pod, the rule first by name applies
// (docs/drain.md); the pod label machine.millwright.dev/drain overrides all.
//
// +kubebuilder:object:root=true
// +kubebuilder:resource:shortName=mdr,categories=millwright
// +kubebuilder:printcolumn:name="Behavior",type=string,JSONPath=`.spec.drain.behavior`
// +kubebuilder:printcolumn:name="Order",type=integer,JSONPath=`.spec.drain.order`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineDrainRule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is the rule.
	Spec MachineDrainRuleSpec `json:"spec"`
}

// MachineDrainRuleList is a list of MachineDrainRules.
//
// +kubebuilder:object:root=true
type MachineDrainRuleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineDrainRule `json:"items"`
}
