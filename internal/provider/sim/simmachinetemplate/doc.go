// Package simmachinetemplate is the sim provider's InfraMachineTemplate
// controller: it fills status.capacity of each SimMachineTemplate with what
// a Node made from spec.template.spec has, the resources of the
// providerSpec's instance type, so that the MachineDeployment controller
// can describe a group of SimMachines scaled to zero (scale-from-zero
// annotations) without a Node to look at.
//
// It is the only writer of status.capacity, and the capacity depends on
// the spec alone, so it needs no driver call and keeps no state: each
// reconcile recomputes it and patches the status when it differs.
package simmachinetemplate
