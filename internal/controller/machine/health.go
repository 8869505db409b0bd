package machine

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// nodeHealth is the verdict on a Machine's Node.
type nodeHealth struct {
	exists, ready, healthy bool
	why                    string // for people, when not ready or not healthy
}

func (h nodeHealth) ok() bool { return h.exists && h.ready && h.healthy }

func evaluateNode(node *corev1.Node, unhealthyConditions []string) nodeHealth {
	if node == nil {
		return nodeHealth{why: "the Node does not exist"}
	}
	h := nodeHealth{exists: true, healthy: true}
	if c := nodeReady(node); c != nil && c.Status == corev1.ConditionTrue {
		h.ready = true
	} else if c != nil {
		h.why = fmt.Sprintf("Node %s is not Ready (%s: %s)", node.Name, c.Reason, c.Message)
	} else {
		h.why = "Node " + node.Name + " has not reported Ready yet"
	}
	var bad []string
	for _, c := range node.Status.Conditions {
		for _, t := range unhealthyConditions {
			if string(c.Type) == t && c.Status == corev1.ConditionTrue {
				bad = append(bad, t)
			}
		}
	}
	if len(bad) > 0 {
		h.healthy = false
		h.why = strings.TrimPrefix(h.why+"; ", "; ") + "Node " + node.Name + " has " + strings.Join(bad, ", ")
	}
	return h
}

// reconcileHealth moves a Machine to Running once its Node is Ready and
// healthy, to Unknown when it stops being so, and to Failed once it has
// been Unknown for the health timeout — if the meltdown limit allows.
func (r *Reconciler) reconcileHealth(ctx context.Context, s *scope) (reconcile.Result, error) {
	m := s.machine
	h := evaluateNode(s.node, s.life.nodeConditions)
	r.setNodeConditions(s, h)
	wasRunning := s.isTrue(v1alpha1.ReadyCondition) || m.Status.UnhealthySince != nil

	switch {
	case !wasRunning && h.ok():
		s.setCondition(v1alpha1.ReadyCondition, metav1.ConditionTrue, ReasonRunning, "Node "+s.node.Name+" is Ready")
		s.operation(v1alpha1.OperationHealthCheck, v1alpha1.OperationSucceeded, "", "Node "+s.node.Name+" joined and is Ready")
		s.joined = true
		return reconcile.Result{}, nil // from now on the health sweep re-checks it too
	case !wasRunning:
		return r.checkCreationTimeout(s), nil
	case h.ok():
		if m.Status.UnhealthySince != nil {
			m.Status.UnhealthySince = nil
			s.setCondition(v1alpha1.ReadyCondition, metav1.ConditionTrue, ReasonRunning, "Node "+s.node.Name+" is Ready again")
			s.operation(v1alpha1.OperationHealthCheck, v1alpha1.OperationSucceeded, "", "Node "+s.node.Name+" recovered")
		}
		return reconcile.Result{}, nil // its Node's events, and the health sweep
	}

	if m.Status.UnhealthySince == nil {
		m.Status.UnhealthySince = &metav1.Time{Time: s.now}
		s.setCondition(v1alpha1.ReadyCondition, metav1.ConditionFalse, ReasonUnhealthy, h.why)
		s.operation(v1alpha1.OperationHealthCheck, v1alpha1.OperationProcessing, "", "unhealthy: "+h.why)
		s.event(corev1.EventTypeWarning, "Unhealthy", h.why)
	}
	if len(s.healthChecks) > 0 {
		// A MachineHealthCheck judges this Machine: it marks it
		// OwnerRemediated=False when it is to be replaced.
		return reconcile.Result{}, nil
	}
	if machinefacts.InPlaceInProgress(m) {
		// Drained and rebooting on purpose: the update's own timeout
		// bounds this (docs/in-place-updates.md), not the health timeout.
		return reconcile.Result{}, nil
	}
	deadline := m.Status.UnhealthySince.Add(s.life.healthTimeout)
	if s.now.Before(deadline) {
		return requeue.Deadline(until(s.now, deadline)), nil
	}
	allowed, why, err := r.replacementAllowed(ctx, m, s.now)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !allowed {
		desc := "health timeout passed, but replacement is deferred: " + why
		if m.Status.LastOperation.Description != desc {
			s.event(corev1.EventTypeWarning, "ReplacementDeferred", desc)
		}
		s.operation(v1alpha1.OperationHealthCheck, v1alpha1.OperationProcessing, "", desc)
		return reconcile.Result{RequeueAfter: r.Config.BackoffBase}, nil
	}
	s.fail(FailureHealthTimeout, fmt.Sprintf("unhealthy for more than the health timeout of %s: %s", s.life.healthTimeout, h.why))
	return reconcile.Result{}, nil
}

func (r *Reconciler) setNodeConditions(s *scope, h nodeHealth) {
	switch {
	case !h.exists:
		s.setCondition(v1alpha1.NodeReadyCondition, metav1.ConditionFalse, ReasonNodeNotFound, waitingForNode(s.machine))
	case h.ready:
		s.setCondition(v1alpha1.NodeReadyCondition, metav1.ConditionTrue, ReasonNodeReady, "Node "+s.node.Name+" is Ready")
	default:
		s.setCondition(v1alpha1.NodeReadyCondition, metav1.ConditionFalse, ReasonNodeNotReady, h.why)
	}
	if h.exists && !h.healthy {
		s.setCondition(v1alpha1.NodeHealthyCondition, metav1.ConditionFalse, ReasonNodeUnhealthy, h.why)
	} else if h.exists {
		s.setCondition(v1alpha1.NodeHealthyCondition, metav1.ConditionTrue, ReasonNodeHealthy, "no unhealthy Node condition is True")
	}
}

func waitingForNode(m *v1alpha1.Machine) string {
	if m.Status.NodeName != "" {
		return "waiting for Node " + m.Status.NodeName + " to register"
	}
	return "waiting for a Node with providerID " + m.Spec.ProviderID + " to register"
}

// replacementAllowed is the meltdown protection: a Machine may be declared
// Failed only while fewer Machines of its MachineDeployment (or MachineSet)
// than the limit are Failed and not yet gone. So a network partition that
// makes every Node look dead replaces them one at a time, not all at once.
//
// Concurrent reconciles read a cache that does not yet show each other's
// decisions, so the decisions are also kept in a ledger, and the check and
// the record happen under one lock. now is the reconcile's time, from the
// reconciler's clock, which also ages the ledger.
func (r *Reconciler) replacementAllowed(ctx context.Context, m *v1alpha1.Machine, now time.Time) (bool, string, error) {
	limit := r.Config.MaxConcurrentReplacements
	var group client.MatchingLabels
	if md := m.Labels[v1alpha1.MachineDeploymentNameLabel]; md != "" {
		group = client.MatchingLabels{v1alpha1.MachineDeploymentNameLabel: md}
		owner := &v1alpha1.MachineDeployment{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: md}, owner); err == nil && owner.Spec.MaxConcurrentReplacements != nil {
			limit = *owner.Spec.MaxConcurrentReplacements
		}
	} else if ms := m.Labels[v1alpha1.MachineSetNameLabel]; ms != "" {
		group = client.MatchingLabels{v1alpha1.MachineSetNameLabel: ms}
		owner := &v1alpha1.MachineSet{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: m.Namespace, Name: ms}, owner); err == nil && owner.Spec.MaxConcurrentReplacements != nil {
			limit = *owner.Spec.MaxConcurrentReplacements
		}
	} else {
		return true, "", nil // a Machine of its own has no fleet to protect
	}

	r.ledger.mu.Lock()
	defer r.ledger.mu.Unlock()
	machines := &v1alpha1.MachineList{}
	if err := r.Client.List(ctx, machines, client.InNamespace(m.Namespace), group, client.UnsafeDisableDeepCopy); err != nil { // read only
		return false, "", err
	}
	groupKey := m.Namespace + "/" + fmt.Sprint(group)
	inFlight := map[string]bool{}
	exists, decided := map[string]bool{}, map[string]bool{}
	for _, other := range machines.Items {
		exists[other.Name] = true
		decided[other.Name] = other.Status.FailureReason != ""
		// A preserved Machine's replacement is already made: it is no
		// longer in flight (docs/preservation.md).
		if other.Name != m.Name && decided[other.Name] && !machinefacts.Preserved(&other) {
			inFlight[other.Name] = true
		}
	}
	pending := r.ledger.forGroup(groupKey)
	for name, at := range pending {
		// Forgotten once the cache shows the decision, or the Machine is
		// gone altogether (replaced faster than the next check), or its
		// write was lost.
		if decided[name] || !exists[name] || now.Sub(at) > ledgerTTL {
			delete(pending, name)
			continue
		}
		if name != m.Name {
			inFlight[name] = true
		}
	}
	if int32(len(inFlight)) >= limit {
		return false, fmt.Sprintf("%d Machine(s) of the same group are already being replaced (limit %d)", len(inFlight), limit), nil
	}
	pending[m.Name] = now
	return true, "", nil
}

// ledgerTTL bounds how long a decision waits to show up in the cache.
const ledgerTTL = 2 * time.Minute

// replacementLedger remembers recent Failed decisions per group until the
// cache shows them.
type replacementLedger struct {
	mu      sync.Mutex
	pending map[string]map[string]time.Time
}

func (l *replacementLedger) forGroup(key string) map[string]time.Time {
	if l.pending == nil {
		l.pending = map[string]map[string]time.Time{}
	}
	if l.pending[key] == nil {
		l.pending[key] = map[string]time.Time{}
	}
	return l.pending[key]
}
