package machinehealthcheck

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classlimit"
)

// verdict is a health check's judgement of one Machine.
type verdict struct {
	healthy bool
	// reason and message say why the Machine is unhealthy.
	reason, message string
	// recheckIn is when the verdict may change by time alone (a condition's
	// timeout running out); 0 when only an event can change it.
	recheckIn time.Duration
	// failing: healthy for now, but a listed condition holds its status
	// and its timeout runs. Such a Machine is not counted healthy, and
	// counts towards triggerIf: a zone going dark Node by Node is held
	// back at the first timeout, not after the first few are replaced.
	failing bool
}

// Reasons of an unhealthy verdict (the HealthCheckSucceeded condition's).
const (
	ReasonNodeStartupTimeout     = "NodeStartupTimeout"
	ReasonNodeNotFound           = "NodeNotFound"
	ReasonUnhealthyNode          = "UnhealthyNode"
	ReasonUnhealthyMachine       = "UnhealthyMachine"
	ReasonMachineFailed          = "MachineFailed"
	ReasonSucceeded              = "HealthCheckSucceeded"
	ReasonSelectionConflict      = "SelectionConflict"
	ReasonWaitingForRemediation  = "WaitingForRemediation"
	ReasonExternalRemediation    = v1alpha1.ExternalRemediationRequestedReason
	ReasonRemediationHeldBack    = "RemediationHeldBack"
	ReasonRemediationSkipped     = "RemediationSkipped"
	ReasonTooManyUnhealthy       = "TooManyUnhealthy"
	ReasonRemediationAllowed     = "RemediationAllowed"
	ReasonNoConflict             = "NoConflict"
	ReasonMaxInFlight            = "MaxInFlight"
	ReasonTemplateNotFound       = "RemediationTemplateNotFound"
	ReasonRemediationCreateError = "RemediationCreateFailed"
)

// judge applies the checks to a Machine and its Node (nil when none is
// found) at now. Like Cluster API: a Machine that had a Node and lost it
// is unhealthy at once; one that never had a Node is unhealthy after
// nodeStartupTimeout from the start of its create (classlimit.CreateStart);
// a listed condition is unhealthy once it has held its status for its
// timeout, and failing until then.
func judge(checks *v1alpha1.MachineHealthCheckChecks, m *v1alpha1.Machine, node *corev1.Node, now time.Time) verdict {
	if m.Status.FailureReason != "" {
		return verdict{reason: ReasonMachineFailed, message: "the Machine is Failed: " + m.Status.FailureReason}
	}
	v := verdict{healthy: true}
	due := func(since time.Time, timeout time.Duration, reason, message string) {
		left := since.Add(timeout).Sub(now)
		if left > 0 {
			v.soonest(left)
			return
		}
		if v.healthy {
			v = verdict{reason: reason, message: message}
		}
	}
	if node == nil {
		if m.Status.NodeRef != nil {
			return verdict{reason: ReasonNodeNotFound, message: "Node " + m.Status.NodeRef.Name + " is gone"}
		}
		// From the start of its create, not from its creation: a Machine
		// waiting in its class's create queue is not late for a Node (its
		// turn coming is a Machine update, which judges it again).
		if start, waiting := classlimit.CreateStart(m); !waiting {
			if t := checks.NodeStartupTimeout; t != nil && t.Duration > 0 {
				due(start, t.Duration, ReasonNodeStartupTimeout,
					fmt.Sprintf("no Node joined within the node startup timeout of %s", t.Duration))
			}
		}
	} else {
		for _, want := range checks.UnhealthyNodeConditions {
			for _, c := range node.Status.Conditions {
				if string(c.Type) == want.Type && string(c.Status) == want.Status {
					due(c.LastTransitionTime.Time, want.Timeout.Duration, ReasonUnhealthyNode,
						fmt.Sprintf("Node %s has %s=%s for more than %s", node.Name, want.Type, want.Status, want.Timeout.Duration))
					v.failing = v.healthy
				}
			}
		}
	}
	for _, want := range checks.UnhealthyMachineConditions {
		if c := meta.FindStatusCondition(m.Status.Conditions, want.Type); c != nil && string(c.Status) == want.Status {
			due(c.LastTransitionTime.Time, want.Timeout.Duration, ReasonUnhealthyMachine,
				fmt.Sprintf("the Machine has %s=%s for more than %s", want.Type, want.Status, want.Timeout.Duration))
			v.failing = v.healthy
		}
	}
	if !v.healthy {
		v.recheckIn = 0 // stays unhealthy until an event says otherwise
	}
	return v
}

func (v *verdict) soonest(d time.Duration) {
	if v.recheckIn == 0 || d < v.recheckIn {
		v.recheckIn = d
	}
}
