package machine

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
	"github.com/millwright-dev/millwright/internal/leaderfence"
)

// classQueueRequeue is a backstop for a Machine queued for a slot of its
// class: a slot given back wakes the Machines queued longest at once
// (classlimit.Limiter.Wake), and a queued Machine's reconcile costs no
// API or driver call while its class is full (see driverInfra.ensure).
const classQueueRequeue = 10 * time.Second

// queuedPrefix starts the lastOperation description of a queued Machine.
const queuedPrefix = "queued: "

// Reasons of the CreateQueued condition.
const (
	ReasonQueued        = "Queued"
	ReasonCreateStarted = "CreateStarted"
	ReasonLeftQueue     = "LeftQueue"
)

// takeSlot asks the limiter for a slot of op in the Machine's class
// (spec.maxConcurrentCreates or spec.maxConcurrentDeletes; every call is
// counted for the class's status, limited or not). Refused, the Machine is
// queued and its lastOperation says so; the description changes only with
// the count, so a Machine waiting is written once, not at every requeue.
// A create refused also sets CreateQueued True, which holds the creation
// timeout back (see creationDeadline); the create it then starts sets it
// False, the time the timeout counts from.
func (r *Reconciler) takeSlot(s *scope, class *v1alpha1.MachineClass, op classlimit.Op) bool {
	s.askedSlot[op] = true
	limit := classlimit.Limit(class, op)
	ok, inFlight := r.Limits.Acquire(op, client.ObjectKeyFromObject(class), limit, client.ObjectKeyFromObject(s.machine), s.machine.UID)
	if ok {
		if op == classlimit.Create {
			endQueued(s, ReasonCreateStarted, "the create started, after waiting for a slot of class "+class.Name)
		}
		return true
	}
	field := "spec.maxConcurrentCreates"
	opType := v1alpha1.OperationCreate
	if op == classlimit.Delete {
		field, opType = "spec.maxConcurrentDeletes", v1alpha1.OperationDelete
	}
	description := fmt.Sprintf("%s%d of %d %s of class %s in flight (its %s); waiting for one to end",
		queuedPrefix, inFlight, *limit, op, class.Name, field)
	// A failed operation's record stays: its failure count is the retry
	// backoff's, which a "queued" record would start again from the base.
	if last := s.machine.Status.LastOperation; last.State != v1alpha1.OperationFailed && (last.Type != opType || last.Description != description) {
		s.operation(opType, v1alpha1.OperationProcessing, "", description)
	}
	// Only the first wait holds the creation timeout back: a Machine
	// queued again (its create failed and is retried) has had its turn,
	// and its timeout keeps counting from its first create.
	if op == classlimit.Create && s.condition(v1alpha1.CreateQueuedCondition) == nil {
		s.setCondition(v1alpha1.CreateQueuedCondition, metav1.ConditionTrue, ReasonQueued, description)
	}
	return false
}

// leftCreateQueue sets CreateQueued False on a Machine whose reconcile did
// not wait for a create slot (its VM was found, its class went, a failure
// it retries later, a restart emptied the queue): the creation timeout
// runs again, so a Machine can never stay exempt from it.
func leftCreateQueue(s *scope) {
	if !s.askedSlot[classlimit.Create] {
		endQueued(s, ReasonLeftQueue, "no longer waiting for a create slot of its class")
	}
}

// endQueued sets CreateQueued False on a Machine that waited, now that its
// create started or its VM was found without one.
func endQueued(s *scope, reason, message string) {
	if s.isTrue(v1alpha1.CreateQueuedCondition) {
		s.setCondition(v1alpha1.CreateQueuedCondition, metav1.ConditionFalse, reason, message)
	}
}

// classFull reports whether the Machine is queued for a create slot of
// its class and none is free yet: its reconcile requeues at once, without
// looking at its VM (a driver call) first.
func (r *Reconciler) classFull(s *scope, class *v1alpha1.MachineClass) bool {
	full := r.Limits.Full(classlimit.Create, client.ObjectKeyFromObject(class),
		classlimit.Limit(class, classlimit.Create), client.ObjectKeyFromObject(s.machine))
	if full {
		s.askedSlot[classlimit.Create] = true
	}
	return full
}

// leaveQueues takes the Machine out of the queues its reconcile did not
// ask a slot of: it is deleted, paused, failed or frozen, its VM was found,
// or its class's limit went; a Machine gone leaves both.
func (r *Reconciler) leaveQueues(machine types.NamespacedName, asked [2]bool) {
	for _, op := range []classlimit.Op{classlimit.Create, classlimit.Delete} {
		if !asked[op] {
			r.Limits.Leave(op, machine)
		}
	}
}

// notLeadingRequeue is how soon a Machine whose create or delete the
// leader fence held back is tried again: by then this replica has renewed
// its Lease, or lost it and stopped.
const notLeadingRequeue = time.Second

// leading asks the fence (Reconciler.Fence) right before a driver call
// that starts a create or a delete: the class limits are counted in this
// replica's memory, and only the leader's count is the class's.
func (r *Reconciler) leading(ctx context.Context, s *scope, call string) bool {
	if !leaderfence.Lost(r.Fence, call) {
		return true
	}
	log.FromContext(ctx).Info("not starting the VM's "+call+": this replica's Lease was not renewed within its renew deadline", "machine", s.machine.Name)
	return false
}
