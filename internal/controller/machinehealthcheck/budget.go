package machinehealthcheck

import (
	"fmt"
	"math"
	"regexp"
	"strconv"

	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// budget is how much remediation a health check may do now.
type budget struct {
	// heldBack: the short-circuit (triggerIf) holds every remediation back.
	heldBack bool
	// why says so, for the RemediationAllowed condition and the Event.
	why string
	// counted says how many Machines are unhealthy, for the same.
	counted string
	// start is how many new remediations may start now.
	start int
	// allowed is status.remediationsAllowed: as in Cluster API, how many
	// more Machines may be remediated before a limit is reached.
	allowed int
}

// maxInt means no bound.
const maxInt = math.MaxInt

var rangePattern = regexp.MustCompile(`^\[([0-9]+)-([0-9]+)\]$`)

// parseRange reads "[min-max]"; admission refuses anything else, so an
// error here means a health check written around validation.
func parseRange(s string) (lo, hi int, err error) {
	m := rangePattern.FindStringSubmatch(s)
	if m == nil {
		return 0, 0, fmt.Errorf("unhealthyInRange %q is not [min-max]", s)
	}
	lo, err1 := strconv.Atoi(m[1])
	hi, err2 := strconv.Atoi(m[2])
	if err1 != nil || err2 != nil || lo > hi {
		return 0, 0, fmt.Errorf("unhealthyInRange %q is not [min-max] with min <= max", s)
	}
	return lo, hi, nil
}

// computeBudget applies triggerIf and maxInFlight to expected selected
// Machines, unhealthy of them, failing more (judge: each counts as
// unhealthy here, as in Cluster API), inFlight already being remediated.
func computeBudget(rem *v1alpha1.MachineHealthCheckRemediation, expected, unhealthy, failing, inFlight int) (budget, error) {
	counted := fmt.Sprintf("%d of %d Machines are unhealthy", unhealthy+failing, expected)
	if failing > 0 {
		counted += fmt.Sprintf(" (%d failing a check whose timeout runs)", failing)
	}
	unhealthy += failing
	b := budget{start: maxInt, allowed: expected - unhealthy, counted: counted}
	if t := rem.TriggerIf; t != nil {
		switch {
		case t.UnhealthyLessThanOrEqualTo != nil:
			most, err := intstr.GetScaledValueFromIntOrPercent(t.UnhealthyLessThanOrEqualTo, expected, false)
			if err != nil {
				return budget{}, fmt.Errorf("triggerIf.unhealthyLessThanOrEqualTo: %w", err)
			}
			b.allowed = most - unhealthy
			if unhealthy > most {
				b.heldBack = true
				b.why = fmt.Sprintf("%s, more than triggerIf.unhealthyLessThanOrEqualTo %s (%d): remediation is held back until enough recover",
					counted, t.UnhealthyLessThanOrEqualTo.String(), most)
			}
		case t.UnhealthyInRange != "":
			lo, hi, err := parseRange(t.UnhealthyInRange)
			if err != nil {
				return budget{}, err
			}
			b.allowed = hi - unhealthy
			if unhealthy < lo || unhealthy > hi {
				b.heldBack = true
				b.why = fmt.Sprintf("%s, outside triggerIf.unhealthyInRange %s: remediation is held back",
					counted, t.UnhealthyInRange)
			}
		}
	}
	if mif := rem.MaxInFlight; mif != nil {
		most, err := intstr.GetScaledValueFromIntOrPercent(mif, expected, true)
		if err != nil {
			return budget{}, fmt.Errorf("maxInFlight: %w", err)
		}
		b.start = max(0, most-inFlight)
		b.allowed = min(b.allowed, b.start)
	}
	if b.heldBack {
		b.start, b.allowed = 0, 0
	}
	b.allowed = max(0, b.allowed)
	return b, nil
}
