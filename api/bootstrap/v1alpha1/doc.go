// Package v1alpha1 is the bootstrap.millwright.dev/v1alpha1 API: the token
// bootstrap provider's config (TokenBootstrapConfig) and its template
// (TokenBootstrapConfigTemplate) under Millwright's contract (version v1beta1,
// docs/contract-providers.md). A Machine points at a TokenBootstrapConfig
// through spec.bootstrap.configRef; the controller
// (internal/provider/tokenbootstrap) makes a per-machine bootstrap token in
// the target cluster and a cloud-init user-data Secret that joins the VM
// with it, and reports the Secret on the fields the contract names.
//
// +kubebuilder:object:generate=true
// +groupName=bootstrap.millwright.dev
package v1alpha1
