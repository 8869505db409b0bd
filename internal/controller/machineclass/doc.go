// Package machineclass is the MachineClass controller: it keeps a class
// that Machines, MachineSets or MachineDeployments use from being deleted
// (a finalizer, held until none references it: without the class no VM of
// its Machines could be deleted), and reports in the class's status whether
// the manager has its driver and how many Machines use it.
package machineclass
