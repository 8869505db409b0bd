// Package plan is the MachineDeployment rollout planner: one pure function,
// Plan, that decides from the deployment's settings and what each of its
// MachineSets has (counted from the Machines themselves) the spec.replicas
// every MachineSet should have after this reconcile. Scale-ups and
// scale-downs are decided together, so a rollout moves in waves: each
// reconcile grows the new set as far as the surge budget allows and shrinks
// the old ones as far as the availability floor allows. A rolling step
// smaller than a batch (BatchOf) is held while the Machines on their way
// can make it one, once, for the controller's short coalescing delay:
// sets move by several Machines a write, not one (docs/rollout.md).
//
// It reads no clock and no client: inputs in, targets out, each with the
// reason a person reads in the rollout log (docs/rollout.md). The
// MachineDeployment controller builds the input, writes each MachineSet at
// most once (shrinks before growths), and the golden tests of this package
// replay whole rollouts in a simulated world through the same function.
package plan
