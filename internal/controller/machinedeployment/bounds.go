package machinedeployment

import (
	"fmt"
	"strconv"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// checkBounds validates the cluster-autoscaler's min/max-size annotations
// as its clusterapi provider reads them: each a non-negative integer, an
// absent one read as 0, and max >= min. set says whether either is there
// (no condition otherwise); problem says, for a person, what is wrong.
func checkBounds(annotations map[string]string) (set bool, problem string) {
	minV, hasMin := annotations[v1alpha1.AutoscalerMinSizeAnnotation]
	maxV, hasMax := annotations[v1alpha1.AutoscalerMaxSizeAnnotation]
	if !hasMin && !hasMax {
		return false, ""
	}
	parse := func(key, v string, has bool) (int64, string) {
		if !has {
			return 0, ""
		}
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < 0 {
			return 0, fmt.Sprintf("annotation %s is %q: it must be a non-negative integer", key, v)
		}
		return n, ""
	}
	lo, p := parse(v1alpha1.AutoscalerMinSizeAnnotation, minV, hasMin)
	if p != "" {
		return true, p
	}
	hi, p := parse(v1alpha1.AutoscalerMaxSizeAnnotation, maxV, hasMax)
	if p != "" {
		return true, p
	}
	if hi < lo {
		if !hasMax {
			return true, fmt.Sprintf("annotation %s is missing: the cluster-autoscaler reads it as 0, below the min-size %d", v1alpha1.AutoscalerMaxSizeAnnotation, lo)
		}
		return true, fmt.Sprintf("max-size %d is below min-size %d: the cluster-autoscaler ignores this group", hi, lo)
	}
	return true, ""
}
