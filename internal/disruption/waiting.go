package disruption

import (
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Waiting reports whether m waits for a budget, and for which kind of
// disruption: its DisruptionAllowed condition as Request wrote it ("<kind>
// waits for MachineDisruptionBudget ..."). An owner that no longer wants
// the disruption releases only its own kinds (Release), not a wait another
// controller's request left.
func Waiting(m *v1alpha1.Machine) (v1alpha1.DisruptionKind, bool) {
	c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != ReasonWaitingForBudget {
		return "", false
	}
	kind, _, _ := strings.Cut(c.Message, " waits for ")
	return v1alpha1.DisruptionKind(kind), true
}
