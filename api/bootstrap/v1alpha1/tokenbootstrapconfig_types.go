package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TokenBootstrapConfigSpec is how a VM joins the target cluster: which API
// server it talks to, which CA it trusts, and how long its bootstrap token
// lives. The user data is written once, so the spec is immutable.
//
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec is immutable: the user data is written once; replace the Machine to change it"
type TokenBootstrapConfigSpec struct {
	// APIServer is the https URL of the target cluster's API server, as the
	// booting VM reaches it. Unset: the controller's default (the manager's
	// --token-bootstrap-api-server, else the target cluster's URL from its
	// kubeconfig).
	// +optional
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="isURL(self) && url(self).getScheme() == 'https' && url(self).getHostname() != ''",message="apiServer must be an https URL with a host"
	APIServer string `json:"apiServer,omitempty"`

	// CABundle is the PEM bundle of the CAs that sign the API server's
	// certificate, which the kubelet trusts. Unset: the controller's
	// default (the target cluster's CA from the manager's kubeconfig). A
	// bundle that is not PEM is a terminal failure (InvalidConfiguration).
	// +optional
	// +kubebuilder:validation:MaxLength=65536
	CABundle []byte `json:"caBundle,omitempty"`

	// TokenTTL is how long the bootstrap token is valid (default 15m). While
	// the Machine has no Node the controller extends it before half of it is
	// left; once the Node joined, the token is deleted.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('2s') && duration(self) <= duration('24h')",message="tokenTTL must be between 2s and 24h"
	TokenTTL *metav1.Duration `json:"tokenTTL,omitempty"`
}

// TokenBootstrapConfigInitializationStatus is the newer form of the
// contract's "bootstrap data ready" signal.
type TokenBootstrapConfigInitializationStatus struct {
	// DataSecretCreated is true once the Secret status.dataSecretName names
	// exists; it never goes back to false. It always equals status.ready.
	// +optional
	DataSecretCreated bool `json:"dataSecretCreated,omitempty"`
}

// TokenBootstrapConfigStatus is the observed state of a TokenBootstrapConfig.
type TokenBootstrapConfigStatus struct {
	// Ready is true once the user-data Secret exists (the contract's
	// "bootstrap data ready"); status.dataSecretName is set by then. It is
	// never reset: the Ready condition tells the current state.
	// +optional
	Ready bool `json:"ready"`

	// DataSecretName names the Secret, in the config's namespace and owned
	// by it, whose key "value" holds the cloud-init user data.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	DataSecretName *string `json:"dataSecretName,omitempty"`

	// Initialization carries dataSecretCreated, the same signal as ready in
	// the newer contract form.
	// +optional
	Initialization *TokenBootstrapConfigInitializationStatus `json:"initialization,omitempty"`

	// TokenID is the public half of the bootstrap token, derived from the
	// config's UID; its Secret in the target cluster is
	// kube-system/bootstrap-token-<tokenID>.
	// +optional
	// +kubebuilder:validation:MaxLength=6
	TokenID string `json:"tokenID,omitempty"`

	// TokenExpiration is when the token stops working unless extended;
	// cleared once the token is deleted.
	// +optional
	TokenExpiration *metav1.Time `json:"tokenExpiration,omitempty"`

	// Joined is true once the owner Machine reported a nodeRef: its Node has
	// used the token, which is then deleted and never made again.
	// +optional
	Joined bool `json:"joined,omitempty"`

	// FailureReason is set, for programs, when the config can never produce
	// working bootstrap data (InvalidConfiguration, TokenConflict); the
	// controller then does nothing more until the config is deleted.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	FailureReason *string `json:"failureReason,omitempty"`

	// FailureMessage says, for people, why the config failed for good.
	// +optional
	// +kubebuilder:validation:MaxLength=10240
	FailureMessage *string `json:"failureMessage,omitempty"`

	// Conditions: Ready and Paused.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=32
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// TokenBootstrapConfig is the bootstrap data of one Machine: a cloud-init
// document that joins its VM to the target cluster with a bootstrap token
// made for that Machine alone (the bootstrap config of the token provider).
//
// +kubebuilder:object:root=true
// +kubebuilder:storageversion
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=tokenbootstrapconfigs,shortName=tbc,scope=Namespaced,categories=millwright
// +kubebuilder:metadata:labels="machine.millwright.dev/v1beta1=v1alpha1"
// +kubebuilder:printcolumn:name="Ready",type=boolean,JSONPath=`.status.ready`
// +kubebuilder:printcolumn:name="DataSecret",type=string,JSONPath=`.status.dataSecretName`
// +kubebuilder:printcolumn:name="Joined",type=boolean,JSONPath=`.status.joined`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.failureReason`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type TokenBootstrapConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// Spec is how the VM joins.
	// +optional
	Spec TokenBootstrapConfigSpec `json:"spec,omitempty"`
	// Status is the bootstrap data and token as the controller last saw them.
	// +optional
	Status TokenBootstrapConfigStatus `json:"status,omitempty"`
}

// TokenBootstrapConfigList is a list of TokenBootstrapConfigs.
//
// +kubebuilder:object:root=true
type TokenBootstrapConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	// Items are the TokenBootstrapConfigs.
	Items []TokenBootstrapConfig `json:"items"`
}
