package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// MachineHealthCheckSpec is what a health check watches and how it
// remediates: Cluster API's MachineHealthCheck, for Millwright's Machines
// (docs/health-checks.md maps each field).
//
// +kubebuilder:validation:XValidation:rule="(has(self.selector.matchLabels) && size(self.selector.matchLabels) > 0) || (has(self.selector.matchExpressions) && size(self.selector.matchExpressions) > 0)",message="spec.selector must not be empty: an empty selector would judge every Machine in the namespace"
type MachineHealthCheckSpec struct {
	// Selector picks the Machines this health check judges. A Machine
	// picked by one health check is judged by it alone: its
	// spec.lifecycle health timeout no longer applies.
	Selector LabelSelector `json:"selector"`

	// Checks say when a Machine is unhealthy.
	// +optional
	Checks MachineHealthCheckChecks `json:"checks,omitempty"`

	// Remediation says when and how unhealthy Machines are remediated.
	// +optional
	Remediation MachineHealthCheckRemediation `json:"remediation,omitempty"`
}

// MachineHealthCheckChecks are the checks of a health check; a Machine
// failing any one of them for its timeout is unhealthy.
type MachineHealthCheckChecks struct {
	// NodeStartupTimeout is how long a Machine may exist without a Node
	// before it is unhealthy; "0s" turns this check off. Default 10m.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$')",message="nodeStartupTimeout must be a non-negative duration such as 10m"
	NodeStartupTimeout *metav1.Duration `json:"nodeStartupTimeout,omitempty"`

	// UnhealthyNodeConditions: a Machine is unhealthy once its Node's
	// condition of that type has had that status for the timeout.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +listMapKey=status
	// +kubebuilder:validation:MaxItems=32
	UnhealthyNodeConditions []UnhealthyNodeCondition `json:"unhealthyNodeConditions,omitempty"`

	// UnhealthyMachineConditions: a Machine is unhealthy once its own
	// condition of that type has had that status for the timeout.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +listMapKey=status
	// +kubebuilder:validation:MaxItems=32
	UnhealthyMachineConditions []UnhealthyMachineCondition `json:"unhealthyMachineConditions,omitempty"`
}

// UnhealthyNodeCondition is a Node condition that, held for Timeout, makes
// its Machine unhealthy.
type UnhealthyNodeCondition struct {
	// Type is the Node condition's type (Ready, DiskPressure, a node
	// problem detector's type...).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	Type string `json:"type"`

	// Status is the condition's status that counts as unhealthy.
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status string `json:"status"`

	// Timeout is how long the condition must hold; "0s" means at once.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$')",message="timeout must be a non-negative duration such as 5m"
	Timeout metav1.Duration `json:"timeout"`
}

// UnhealthyMachineCondition is a Machine condition that, held for Timeout,
// makes the Machine unhealthy.
type UnhealthyMachineCondition struct {
	// Type is the Machine condition's type (Ready, NodeHealthy, ...).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=316
	// +kubebuilder:validation:Pattern=`^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$`
	Type string `json:"type"`

	// Status is the condition's status that counts as unhealthy.
	// +kubebuilder:validation:Enum=True;False;Unknown
	Status string `json:"status"`

	// Timeout is how long the condition must hold; "0s" means at once.
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="self.matches('^([0-9]+([.][0-9]+)?(ns|us|ms|s|m|h))+$')",message="timeout must be a non-negative duration such as 5m"
	Timeout metav1.Duration `json:"timeout"`
}

// MachineHealthCheckRemediation says when and how unhealthy Machines are
// remediated.
type MachineHealthCheckRemediation struct {
	// TriggerIf holds remediation back while too many Machines are
	// unhealthy at once (the short-circuit): a zone going dark is not
	// fixed by replacing every Machine in it.
	// +optional
	TriggerIf *MachineHealthCheckTriggerIf `json:"triggerIf,omitempty"`

	// MaxInFlight bounds the Machines being remediated at once: a number,
	// or a percentage of the Machines selected. Unset: no bound of its own
	// (the group's meltdown limit, maxConcurrentReplacements, still holds).
	// +optional
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="maxInFlight must be a non-negative number or a percentage from 0% to 100%"
	MaxInFlight *intstr.IntOrString `json:"maxInFlight,omitempty"`

	// TemplateRef names a template for external remediation: for each
	// unhealthy Machine, an object is made from the template's
	// spec.template (kind: the template's kind without the "Template"
	// suffix, name: the Machine's), owned by the Machine, for another
	// controller to act on; it is deleted once the Machine is healthy
	// again. Millwright then replaces nothing itself.
	// +optional
	TemplateRef *RemediationTemplateReference `json:"templateRef,omitempty"`
}

// MachineHealthCheckTriggerIf holds remediation back while too many
// Machines are unhealthy. At most one field may be set.
//
// +kubebuilder:validation:XValidation:rule="!(has(self.unhealthyLessThanOrEqualTo) && has(self.unhealthyInRange))",message="set at most one of unhealthyLessThanOrEqualTo and unhealthyInRange"
type MachineHealthCheckTriggerIf struct {
	// UnhealthyLessThanOrEqualTo lets remediation happen only while at
	// most this many Machines (a number, or a percentage of those
	// selected) are unhealthy.
	// +optional
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 0 : self.matches('^(100|[1-9]?[0-9])%$')",message="unhealthyLessThanOrEqualTo must be a non-negative number or a percentage from 0% to 100%"
	UnhealthyLessThanOrEqualTo *intstr.IntOrString `json:"unhealthyLessThanOrEqualTo,omitempty"`

	// UnhealthyInRange lets remediation happen only while the number of
	// unhealthy Machines is within the range, "[min-max]" as in "[3-5]".
	// +optional
	// +kubebuilder:validation:MaxLength=23
	// +kubebuilder:validation:XValidation:rule="self.matches('^\\\\[[0-9]{1,9}-[0-9]{1,9}\\\\]$') && int(self.substring(1, self.indexOf('-'))) <= int(self.substring(self.indexOf('-') + 1, size(self) - 1))",message="unhealthyInRange must be \"[min-max]\" with min <= max, such as \"[3-5]\""
	UnhealthyInRange string `json:"unhealthyInRange,omitempty"`
}

// RemediationTemplateReference names a remediation template in the health
// check's namespace.
type RemediationTemplateReference struct {
	// APIVersion of the template, "group/version".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=317
	APIVersion string `json:"apiVersion"`

	// Kind of the template; it must end in "Template".
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self.endsWith('Template')",message="templateRef.kind must end in Template: the remediation object's kind is the template's without that suffix"
	Kind string `json:"kind"`

	// Name of the template.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// MachineHealthCheckStatus is what the health check controller observed.
type MachineHealthCheckStatus struct {
	// ExpectedMachines is the number of Machines the selector picks.
	// +optional
	ExpectedMachines int32 `json:"expectedMachines"`

	// CurrentHealthy is the number of those Machines that are healthy: not
	// unhealthy, and not failing a check whose timeout still runs.
	// +optional
	CurrentHealthy int32 `json:"currentHealthy"`

	// RemediationsAllowed is how many more Machines may be remediated now
	// (triggerIf and maxInFlight); 0 while short-circuited.
	// +optional
	RemediationsAllowed int32 `json:"remediationsAllowed"`

	// UnhealthyMachines are the selected Machines found unhealthy, and why.
	// +optional
	// +listType=map
	// +listMapKey=name
	UnhealthyMachines []UnhealthyMachine `json:"unhealthyMachines,omitempty"`

	// ObservedGeneration is the generation of the health check last reconciled.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: RemediationAllowed, SelectionConflict.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// UnhealthyMachine is one unhealthy Machine and why.
type UnhealthyMachine struct {
	// Name of the Machine.
	Name string `json:"name"`
	// Reason it is unhealthy, for people.
	Reason string `json:"reason"`
}

// Condition types of a MachineHealthCheck.
const (
	// RemediationAllowedCondition: False while the short-circuit
	// (triggerIf) holds remediation back.
	RemediationAllowedCondition = "RemediationAllowed"
	// SelectionConflictCondition: True while another health check selects
	// some of the same Machines; those Machines are judged by neither.
	SelectionConflictCondition = "SelectionConflict"
)

// Condition types a health check sets on the Machines it selects.
const (
	// HealthCheckSucceededCondition: the Machine passed its health check.
	HealthCheckSucceededCondition = "HealthCheckSucceeded"
	// OwnerRemediatedCondition False: the Machine is unhealthy and its
	// owner is to replace it (set by the health check, acted on by the
	// machine controller and the MachineSet).
	OwnerRemediatedCondition = "OwnerRemediated"
	// ExternalRemediationRequestedReason is the reason of a False
	// HealthCheckSucceeded while the health check's external remediation
	// object exists: the Machine is being remediated and counts as
	// unavailable in its disruption budgets (docs/disruption-budgets.md).
	ExternalRemediationRequestedReason = "ExternalRemediationRequested"
)

// MachineHealthCheck judges the health of the Machines it selects and
// remediates the unhealthy ones: their MachineSet replaces them, or an
// external remediation object is made for them.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=mhc,categories=millwright
// +kubebuilder:printcolumn:name="Expected",type=integer,JSONPath=`.status.expectedMachines`
// +kubebuilder:printcolumn:name="Healthy",type=integer,JSONPath=`.status.currentHealthy`
// +kubebuilder:printcolumn:name="Allowed",type=integer,JSONPath=`.status.remediationsAllowed`,description="remediations allowed now"
// +kubebuilder:printcolumn:name="Remediation",type=string,JSONPath=`.status.conditions[?(@.type=="RemediationAllowed")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type MachineHealthCheck struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is what the health check watches and how it remediates.
	Spec MachineHealthCheckSpec `json:"spec"`

	// Status is what the health check controller observed.
	// +optional
	Status MachineHealthCheckStatus `json:"status,omitempty"`
}

// MachineHealthCheckList is a list of MachineHealthChecks.
//
// +kubebuilder:object:root=true
type MachineHealthCheckList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []MachineHealthCheck `json:"items"`
}
