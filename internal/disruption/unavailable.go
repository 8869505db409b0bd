package disruption

import (
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// counted reports whether a Machine a budget selects counts in it at all.
// A failed Machine kept by preservation has been replaced already (its
// owner no longer counts it): counting it would hold the budget for the
// whole preserve timeout (docs/preservation.md).
func counted(m *v1alpha1.Machine) bool {
	return !(machinefacts.Failed(m) && machinefacts.Preserved(m))
}
