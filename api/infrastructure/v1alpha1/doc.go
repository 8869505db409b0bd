// Package v1alpha1 is the infrastructure.millwright.dev/v1alpha1 API: the
// sim provider's InfraMachine (SimMachine) and InfraMachineTemplate
// (SimMachineTemplate) under Millwright's contract (version v1beta1, see
// docs/contract-providers.md). A Machine points at a SimMachine through
// spec.infrastructureRef; the SimMachine controller (internal/provider/sim/simmachine)
// makes its VM in the simulated cloud and reports it back on the fields the
// contract names.
//
// +kubebuilder:object:generate=true
// +groupName=infrastructure.millwright.dev
package v1alpha1
