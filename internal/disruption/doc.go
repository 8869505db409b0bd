// Package disruption answers, from the MachineDisruptionBudgets of a
// namespace, whether Millwright may disrupt a Machine now — delete it in a
// rollout or a scale-down, update it in place, have a health check replace
// it, end its preservation — and records the answer in the API before the
// disruption starts, so that two controllers asking at once never both take
// the last allowed disruption.
//
// Three parts, one concern each:
//
//   - Unavailable is the one definition of an unavailable Machine
//     (machinefacts.Unavailable, which the planners share).
//   - Evaluate computes a budget's status from its Machines (the budget
//     controller's work, internal/controller/machinedisruptionbudget),
//     through a Tally: the controller keeps one per budget and puts
//     only the Machines whose events arrived.
//   - Gate is what a controller calls before a voluntary disruption: it
//     grants (recording the grant on every matching budget under its
//     resourceVersion) or says which budget holds the Machine back, on the
//     Machine's DisruptionAllowed condition and in an Event.
//
// docs/disruption-budgets.md describes the rules and the design.
package disruption
