package machinedeployment

import (
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/statuspace"
)

// zoneCountInterval is how often, at most, a deployment writes a status
// whose only change is its zones' Machine counts (status.failureDomains[].machines,
// and the Spread condition's message that quotes them) while they move:
// the interval at which a MachineSet writes its replica counts
// (machineset's countInterval). The deployment counts each zone's
// Machines from the Machines at each Machine event, so written each time
// they cost about a status write per Machine in a spread scale-up
// (docs/benchmarks.md). No controller decides from them: the zones'
// capacity records in the same status are written at once.
const zoneCountInterval = time.Second

// zoneCountPace remembers, per deployment, when this controller last
// wrote its status. Kept in memory only: a restarted manager writes at
// once.
type zoneCountPace struct {
	statuspace.Memory[types.NamespacedName]
}

// wait says how long to hold computed, the status this reconcile computed
// for the deployment key whose status it read as read: 0 to write it
// now. Only a status whose zone counts alone changed, of a deployment
// whose zones do not all hold their share yet, waits; the count that
// reaches every share, and every other change, is written at once.
func (p *zoneCountPace) wait(key types.NamespacedName, read, computed *v1alpha1.MachineDeploymentStatus, now time.Time) time.Duration {
	if zonesSettled(computed) || !zoneCountsOnly(read, computed) {
		return 0
	}
	return p.Left(key, zoneCountInterval, now)
}

// zonesSettled reports whether every zone of st holds its share.
func zonesSettled(st *v1alpha1.MachineDeploymentStatus) bool {
	for _, z := range st.FailureDomains {
		if z.Machines != z.Target {
			return false
		}
	}
	return true
}

// zoneCountsOnly reports whether computed differs from read only in its
// zones' Machine counts and the Spread condition's message.
func zoneCountsOnly(read, computed *v1alpha1.MachineDeploymentStatus) bool {
	if len(read.FailureDomains) != len(computed.FailureDomains) || equality.Semantic.DeepEqual(read, computed) {
		return false
	}
	c := read.DeepCopy()
	for i := range c.FailureDomains {
		c.FailureDomains[i].Machines = computed.FailureDomains[i].Machines
	}
	was, is := meta.FindStatusCondition(c.Conditions, v1alpha1.SpreadCondition), meta.FindStatusCondition(computed.Conditions, v1alpha1.SpreadCondition)
	if was != nil && is != nil {
		was.Message = is.Message
	}
	return equality.Semantic.DeepEqual(c, computed)
}
