package disruption

import (
	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// InPlaceInProgress is machinefacts.InPlaceInProgress. It stays here for
// the callers in other controllers until they read machinefacts
// themselves.
func InPlaceInProgress(m *v1alpha1.Machine) bool { return machinefacts.InPlaceInProgress(m) }
