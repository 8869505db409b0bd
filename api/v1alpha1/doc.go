// Package v1alpha1 is the machine.millwright.dev/v1alpha1 API: MachineClass,
// Machine, MachineSet and MachineDeployment.
//
// Validation lives in the types' markers, which become OpenAPI and CEL rules
// in the generated CRDs, so the API server refuses bad objects at admission
// time with a message a person can act on.
//
// +kubebuilder:object:generate=true
// +groupName=machine.millwright.dev
package v1alpha1
