// Package machinedeployment is the MachineDeployment controller: it rolls a
// fleet from one Machine template to the next through MachineSets, one per
// template revision, like the Kubernetes Deployment controller does with
// ReplicaSets. The MachineSet controller keeps each set's Machines; this
// controller only decides how many each set should have.
//
// # MachineSets and revisions
//
// A MachineSet is named <deployment>-<hash>. The hash (fnv-32a, encoded
// like Kubernetes' pod-template-hash) covers spec.template.spec without
// nodeTemplate and lifecycle, plus status.collisionCount once a name was
// taken by a MachineSet of another template. Those two fields and the
// template's labels and annotations change in place: they are copied into
// every owned MachineSet's template (the MachineSet controller copies them
// on to its Machines), so editing them never replaces a Machine. Any other
// template change (class, infrastructureRef, bootstrap, failureDomain,
// clusterName) makes a new MachineSet.
//
// The MachineSet whose template matches the deployment's (apart from the
// in-place fields) is the new one; it gets revision max(old revisions)+1,
// recorded in the revision annotations of the set and of the deployment.
// Old, empty MachineSets beyond spec.revisionHistoryLimit are deleted,
// lowest revision first. spec.rollbackTo copies the template of the named
// revision (0: the one before the current) back into the deployment.
//
// # The planner
//
// Every reconcile hands package plan the deployment's settings and, for
// each MachineSet, its spec.replicas, its replica annotations and its
// Machines, counted by this controller itself from the Machines it lists:
// how many exist, how many are being deleted, and how many are available
// (Ready for minReadySeconds, no failureReason, not being deleted). The
// planner returns the spec.replicas of every set for this reconcile,
// scale-ups and scale-downs together; the reconcile writes each set at
// most once, shrinks first, so a rollout moves in waves instead of one
// kind of step per reconcile, and never waits for a MachineSet's status.
// It is woken by its Machines' Ready and failure changes and comes back at
// the instant a Ready Machine passes minReadySeconds. docs/rollout.md
// shows the rules with the planner's own logs.
//
// # Counting Machines
//
// A MachineSet counts against the surge budget for what its controller
// keeps, max(spec.replicas, Machines not being deleted), plus its Machines
// being deleted until they are gone (replacementPolicy
// TerminationComplete, the default): the fleet never exceeds
// replicas + maxSurge Machine objects, and Machines still draining are
// never replaced early. With TerminationStarted a Machine stops counting
// once its deletion starts: at most replicas + maxSurge Machines that are
// not being deleted exist, more objects while old ones drain. A set counts
// for min(available Machines, spec.replicas) of availability, so a set
// being scaled down is never credited with Machines it is about to lose.
//
// # Scaling while a rollout is in progress
//
// When spec.replicas changes while several MachineSets have Machines (a
// scaling event, detected by the desired-replicas annotation as in
// Kubernetes), the planner scales before it rolls out, with the rule of
// the Machine Controller Manager: scale-out adds Machines only to the new
// MachineSet; scale-in removes Machines from every active MachineSet in
// proportion to its size. Precisely, with budget = replicas + maxSurge
// (maxSurge only for RollingUpdate; 0 when replicas is 0):
//
//   - no active set: the newest set gets replicas;
//   - the new set is saturated (replicas, all available): old sets go to 0;
//   - one active set that receives scale-out (see below): it gets replicas;
//   - otherwise, toAdd = budget − Σ active spec.replicas. If positive, it
//     all goes to the new set (or, while paused before the new set got any
//     Machine, to the active set with the highest revision), never past
//     replicas. If negative, each active set shrinks to round(spec ×
//     budget / max-replicas annotation) — the annotation is the budget when
//     the set was last scaled, falling back to status.replicas — the sets
//     sorted largest first, older first on ties; the rounding leftover
//     goes to the first (largest) set, and no set goes below 0.
//
// A growth is held to what the surge budget has room for while old
// Machines are still being deleted. Every set that keeps Machines gets the
// new replica annotations in the same write, so one reconcile settles the
// event — except a set whose growth is held (budget or freeze): it keeps
// its annotations, and the event stays pending until it got all.
//
// # Strategies
//
// RollingUpdate follows Kubernetes, both halves in one reconcile: the new
// set grows while the fleet is below replicas + maxSurge (maxSurge rounds
// up, maxUnavailable down, as percentages of replicas); old sets first
// lose Machines that are not available (that costs no availability), then
// available ones while more than replicas − maxUnavailable stay available.
//
// Recreate scales every old set to 0, waits until none of their Machines
// exists any more, then creates the new set at replicas.
//
// OnDelete creates the new set at 0 and never deletes an old Machine to
// replace it (lowering spec.replicas still scales every active set in, in
// proportion, as a scaling event does). An old set's spec.replicas follows what it has left: its Machines
// not being deleted that existed when the set was superseded (the
// superseded-at annotation), so a replacement its MachineSet controller
// may have raced to create is not counted and goes first. The new set gets
// replicas − Σ old spec.replicas.
//
// InPlace (docs/in-place-updates.md) replaces no Machine: the new set is
// created at 0 and the planner's in-place mode (plan/inplace.go) moves
// Machines into it one by one, up to strategy.inPlace.maxUnavailable at a
// time (Manual: only those a person selected): their old set's replicas
// and moving-out list in one patch, the new set's replicas and moving-in
// list in one patch, then the Machine's target annotation, which the
// machine controller acts on. A MachineSet counts its Machines minus its
// moving-out list plus its moving-in list, so no set creates or deletes a
// Machine in transit. The plan closes moved Machines (lists only), gives
// failed ones back (target set first) and has refused ones deleted by
// their set and replaced by the target; more failures than maxFailed stop
// it (Progressing False, reason InPlaceUpdateFailed).
//
// # Pause, freeze, progress
//
// A paused deployment still scales but neither creates nor grows a
// MachineSet for a new template, nor pushes in-place template changes. A
// deployment labelled frozen (by the safety controller) raises no
// MachineSet's spec.replicas; scale-downs still happen. Progressing is
// True while the rollout moves (its lastTransitionTime is the last time it
// did), False with reason ProgressDeadlineExceeded once it has not moved
// for progressDeadlineSeconds (checked at that instant, not at a resync),
// Unknown while paused.
//
// # Cluster-autoscaler
//
// The min/max-size annotations are checked (AutoscalerBoundsValid). For
// scale from zero, the capacity.cluster-autoscaler.kubernetes.io/*
// annotations of the deployment and of each MachineSet are written from
// the MachineClass its template names: the class's nodeTemplate plus the
// template's own nodeTemplate labels and taints (see capacity.go).
package machinedeployment
