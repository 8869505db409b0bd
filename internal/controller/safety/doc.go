// Package safety is the safety controller. It guards against the two
// expensive failures of a machine controller manager: paying for VMs no
// Machine manages, and a controller running away with the fleet.
//
//   - Orphan VM collection: VMs a driver lists that no Machine claims are
//     deleted once seen orphaned on two consecutive passes.
//   - Overshoot freeze: a MachineSet with too many Machines is labelled
//     frozen, and the MachineSet and MachineDeployment controllers stop
//     scaling it up until the count falls or a person lifts the freeze.
//   - API-server freeze: while the control or target API server does not
//     answer, the machine controller makes no transition (it could not see
//     the Nodes it would declare dead).
//   - Stale Nodes: Nodes no Machine owns are annotated and reported, never
//     deleted.
//
// Each runs on its own goroutine or controller: none ever blocks the
// workers of the other controllers.
package safety
