package disruption

// Reasons of a budget's DisruptionAllowed and Overlapping conditions, set
// by the budget controller from an Evaluation.
const (
	// ReasonDisruptionsAllowed: the budget grants disruptions now.
	ReasonDisruptionsAllowed = "DisruptionsAllowed"
	// ReasonBudgetExhausted: maxUnavailable selected Machines (or more)
	// are unavailable; voluntary disruptions wait.
	ReasonBudgetExhausted = "BudgetExhausted"
	// ReasonNoMachinesSelected: the selector matches no Machine; the
	// budget bounds nothing (a typo in the selector, or a pool not yet
	// created).
	ReasonNoMachinesSelected = "NoMachinesSelected"
	// ReasonInvalidSpec: the spec cannot be read (written around
	// admission); the budget holds its Machines' disruptions back.
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonOverlapping / ReasonNoOverlap: some selected Machines are (are
	// not) also selected by other budgets.
	ReasonOverlapping = "SharedMachines"
	// ReasonNoOverlap: no other budget selects any of this budget's Machines.
	ReasonNoOverlap = "NoSharedMachines"
)
