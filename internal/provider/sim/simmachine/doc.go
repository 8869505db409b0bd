// Package simmachine is the sim provider's InfraMachine controller: it
// reconciles SimMachines (infrastructure.millwright.dev/v1alpha1) into VMs
// of the simulated cloud, through the same driver.Driver the sim serves
// over gRPC, so faults, outages and the admin API apply to them as to any
// driver-made VM.
//
// It follows the contract's InfraMachine reconciliation workflow
// (docs/contract-providers.md; a
// Millwright deployment has no Cluster object, so steps 3 and 5 do not
// apply) and implements every rule of the contract: providerID, failure
// domain, addresses, initialization (status.ready and
// status.initialization.provisioned), conditions (Ready over the whole
// lifecycle, Paused), terminal failures and pausing.
//
// A SimMachine's VM is keyed in the sim by its owner Machine's namespace
// and name, and the sim never makes two VMs for one key; the controller
// also never makes a second VM for a SimMachine whose providerID is set.
package simmachine
