package machinedeployment

// autoPreserveLimit is the spec.autoPreserveFailedMax a set of the
// deployment gets: the deployment's for its newest set, and 0 for every
// set while a rollout is in progress (an older set still has Machines) and
// for the old sets always. Failed Machines kept during a rollout would
// stall it, Machines of the new template waiting on the old ones
// (docs/preservation.md); the MachineSet releases the ones it kept above
// its limit.
func autoPreserveLimit(s *scope, isNew bool) *int32 {
	want := s.md.Spec.AutoPreserveFailedMax
	if want == nil {
		return nil
	}
	if !isNew || rollingOut(s) {
		zero := int32(0)
		return &zero
	}
	n := *want
	return &n
}

// rollingOut reports whether an older set of the deployment still has
// Machines or is asked for some: a rollout is in progress.
func rollingOut(s *scope) bool {
	for _, ms := range s.oldSets {
		if ms.DeletionTimestamp.IsZero() && (ms.Spec.Replicas > 0 || ms.Status.Replicas > 0) {
			return true
		}
	}
	return false
}
