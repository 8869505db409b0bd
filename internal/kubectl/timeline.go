package kubectl

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// step is one line of a Machine's timeline.
type step struct {
	at     time.Time
	what   string // what happened, for a person
	detail string
	order  int // breaks ties between steps of the same instant: the order they happen in
}

// Event reasons the machine controller records (internal/controller/machine)
// and the step each one is on a Machine's way; any other reason is shown
// as "event <Reason>".
var eventSteps = map[string]string{
	"CreateSucceeded":       "VM created",
	"CreateFailed":          "VM create failed",
	"InitializeSucceeded":   "VM initialized",
	"InitializeFailed":      "VM initialize failed",
	"Provisioned":           "infrastructure provisioned",
	"HealthCheckSucceeded":  "Node healthy",
	"HealthCheckFailed":     "health check failed",
	"PhaseUnknown":          "became Unknown",
	"PhaseFailed":           "became Failed",
	"PhaseCrashLoopBackOff": "create backing off",
	"Unhealthy":             "Node unhealthy",
	"ReplacementDeferred":   "replacement deferred",
	"DrainSucceeded":        "drain finished",
	"DrainFailed":           "drain failed",
	"ForceDrain":            "drain forced",
	"DeleteSucceeded":       "VM deleted",
	"DeleteFailed":          "VM delete failed",
	"Deleting":              "deleting infrastructure",
	"VolumesReleased":       "volumes released",
	"NodeDeleted":           "Node deleted",
	"TriggerDeletion":       "replacement asked on the Node",
	"CreationTimeout":       "creation timed out",
	"HealthTimeout":         "health timed out",
}

// conditionSteps name a condition's last transition by type and status.
var conditionSteps = map[string]map[metav1.ConditionStatus]string{
	v1alpha1.BootstrapReadyCondition:      {metav1.ConditionTrue: "bootstrap data ready", metav1.ConditionFalse: "waiting for bootstrap data"},
	v1alpha1.InfrastructureReadyCondition: {metav1.ConditionTrue: "VM provisioned", metav1.ConditionFalse: "VM requested"},
	v1alpha1.NodeReadyCondition:           {metav1.ConditionTrue: "Node Ready", metav1.ConditionFalse: "Node not Ready", metav1.ConditionUnknown: "Node not Ready"},
	v1alpha1.NodeHealthyCondition:         {metav1.ConditionTrue: "Node healthy", metav1.ConditionFalse: "Node unhealthy"},
	v1alpha1.ReadyCondition:               {metav1.ConditionTrue: "Running", metav1.ConditionFalse: "not Running"},
	v1alpha1.DrainedCondition:             {metav1.ConditionTrue: "drain finished", metav1.ConditionFalse: "draining"},
	v1alpha1.PausedCondition:              {metav1.ConditionTrue: "paused", metav1.ConditionFalse: "resumed"},
}

// timeline gathers every dated fact about m: its creation, each
// condition's last transition, the last operation, the health and deletion
// times, its Node's registration and readiness, and its Events. Conditions
// keep only their last transition; the Events (kept by the API server for
// an hour by default) fill in the steps before it.
func timeline(m *v1alpha1.Machine, node *corev1.Node, events []event) []step {
	var steps []step
	add := func(at time.Time, order int, what, detail string) {
		if !at.IsZero() {
			steps = append(steps, step{at: at, what: what, detail: detail, order: order})
		}
	}
	add(m.CreationTimestamp.Time, 0, "created", "")
	for _, c := range m.Status.Conditions {
		what := conditionSteps[c.Type][c.Status]
		if what == "" {
			what = fmt.Sprintf("%s=%s", c.Type, c.Status)
		}
		detail := c.Reason
		if c.Message != "" {
			detail += ": " + c.Message
		}
		if c.Type == v1alpha1.InfrastructureReadyCondition && c.Status == metav1.ConditionTrue && m.Spec.ProviderID != "" {
			detail = "providerID " + m.Spec.ProviderID
		}
		add(c.LastTransitionTime.Time, 2, what, detail)
	}
	if lo := m.Status.LastOperation; lo.Type != "" {
		detail := lo.Description
		if lo.ErrorCode != "" {
			detail += fmt.Sprintf(" (code %s, failure %d)", lo.ErrorCode, lo.FailureCount)
		}
		add(lo.LastUpdateTime.Time, 3, fmt.Sprintf("last operation %s %s", lo.Type, lo.State), detail)
	}
	if m.Status.UnhealthySince != nil {
		add(m.Status.UnhealthySince.Time, 2, "became Unknown", "the health timeout runs from here")
	}
	if m.DeletionTimestamp != nil {
		add(m.DeletionTimestamp.Time, 1, "deletion requested", "")
	}
	if d := m.Status.Deletion; d != nil {
		add(d.StartTime.Time, 1, "deletion started", "")
		add(d.StepStartTime.Time, 2, "deletion step "+string(d.Step)+" started", d.ForceReason)
		if d.Drain != nil && d.Drain.LastRefusedTime != nil {
			add(d.Drain.LastRefusedTime.Time, 3, "drain blocked", fmt.Sprintf("an eviction was refused (attempt %d)", d.Drain.Attempts))
		}
	}
	if node != nil {
		add(node.CreationTimestamp.Time, 1, "Node joined", "Node "+node.Name)
	}
	for _, e := range events {
		for i, part := range eventParts(e) {
			what := partSteps(part)
			if what == "" {
				what = eventSteps[e.reason]
			}
			if what == "" {
				what = "event " + e.reason
			}
			if e.count > 1 {
				part += fmt.Sprintf(" (%d times, last at %s)", e.count, e.last.UTC().Format(time.RFC3339))
			}
			add(e.first, 4+i, what, part)
		}
	}
	sort.SliceStable(steps, func(i, j int) bool {
		if !steps[i].at.Equal(steps[j].at) {
			return steps[i].at.Before(steps[j].at)
		}
		return steps[i].order < steps[j].order
	})
	return steps
}

// eventParts splits the message of a *Succeeded Event: the machine
// controller records the operations one reconcile carried out as one
// Event named after the last, their descriptions joined by "; "
// (internal/controller/machine, emitSucceeded), and each is a step.
func eventParts(e event) []string {
	if !strings.HasSuffix(e.reason, "Succeeded") {
		return []string{e.message}
	}
	return strings.Split(e.message, "; ")
}

// partSteps names the step one operation's description records, from the
// words the machine controller writes; "" when it does not know it.
func partSteps(description string) string {
	for _, p := range []struct{ prefix, step string }{
		{"created VM", "VM created"},
		{"initialized VM", "VM initialized"},
		{"drained Node", "drain finished"},
		{"deleted VM", "VM deleted"},
	} {
		if strings.HasPrefix(description, p.prefix) {
			return p.step
		}
	}
	if strings.HasPrefix(description, "Node ") && strings.Contains(description, "joined") {
		return "Node Ready"
	}
	return ""
}
