// Package kubectl is the kubectl-millwright command (also run as
// millwright): the fleet table, a Machine's timeline, MachineDeployment
// rollouts, the overshoot freeze and drain status, read and written
// through the user's kubeconfig like kubectl. One verb per file; the
// command is built by NewCommand so that tests run it against a real API
// server without building the binary. Users' guide: docs/kubectl-plugin.md.
package kubectl
