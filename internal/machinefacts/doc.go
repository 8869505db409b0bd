// Package machinefacts says what a Machine's fields mean, once, for every
// controller and test that decides from them: whether a Machine is
// available (Available, UntilAvailable) or unavailable and why
// (Unavailable), where it is in an in-place update (InPlaceInProgress,
// InPlaceStopped), what its annotations say about the order in which
// a scale-down takes Machines (DeleteGroup), whether it is preserved
// (Preserved, PreserveRequested), its phase (Phase, CreateMayBeInFlight),
// and whether its provider refused it for capacity (RefusedForCapacity);
// and, of a MachineDeployment, the rollout
// arithmetic of its strategy (Fenceposts, MaxSurge).
//
// It is pure — it reads the Machine it is given, and imports no controller
// — and sits below every controller: the planner of the MachineDeployment,
// the MachineSet's victim order, the disruption budgets and the e2e checks
// all count with it, so "available" means one thing in all of them
// (docs/rollout.md, docs/disruption-budgets.md).
package machinefacts
