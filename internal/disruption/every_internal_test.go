package disruption

import (
	"maps"
	"math/rand"
	"reflect"
	"slices"
	"sort"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/brief"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// TestTallyEvaluatesAsReadingEveryMachine compares, for 20,000 drawn
// namespaces, what a tally evaluates with what the recount it replaced
// computed, reading every Machine at each evaluation (its loops written
// out again below): the state and the Overlapping names.
func TestTallyEvaluatesAsReadingEveryMachine(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	others := otherBudgets()
	for draw := 0; draw < 20000; draw++ {
		names := []string{"m0", "m1", "m2", "m3", "m4", "m5", "m6", "m7"}
		b := drawBudget(rng, names)
		owners := drawOwners(rng)
		ofMachine := func(m *v1alpha1.Machine) (string, int32, bool) {
			ref := metav1.GetControllerOfNoCopy(m)
			if ref == nil || ref.Kind != "MachineSet" {
				return "", 0, false
			}
			return owners(ref.Name)
		}
		var machines []*v1alpha1.Machine
		for _, n := range names[:rng.Intn(len(names))+1] {
			machines = append(machines, drawMachine(rng, n))
		}
		want, err1 := evaluateEveryMachine(b, machines, ofMachine, drawNow)
		got, err2 := Evaluate(b, machines, owners, drawNow)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("draw %d:\nreading every Machine %+v\ntally                 %+v", draw, want, got)
		}
		if want, got := overlappingEveryMachine(b, others, machines), tallyOf(t, b, others, machines).Overlapping(); !reflect.DeepEqual(want, got) {
			t.Fatalf("draw %d: overlapping: reading every Machine %v, tally %v", draw, want, got)
		}
	}
}

// machineOwners is Owners by Machine, as the recount read it.
type machineOwners func(m *v1alpha1.Machine) (key string, replicas int32, ok bool)

// evaluateEveryMachine is Evaluate as it was before the tally: it reads
// every Machine.
func evaluateEveryMachine(b *v1alpha1.MachineDisruptionBudget, machines []*v1alpha1.Machine, owners machineOwners, now time.Time) (Evaluation, error) {
	sel, err := selector(b)
	if err != nil {
		return Evaluation{}, err
	}
	ev := Evaluation{Why: map[string]string{}}
	selected := map[string]*v1alpha1.Machine{}
	for _, m := range machines {
		if m.Namespace != b.Namespace || !sel.Matches(labels.Set(m.Labels)) || !counted(m) {
			continue
		}
		selected[m.Name] = m
		if c := meta.FindStatusCondition(m.Status.Conditions, v1alpha1.DisruptionAllowedCondition); c != nil &&
			c.Status == "False" && m.DeletionTimestamp.IsZero() {
			ev.Waiting = append(ev.Waiting, v1alpha1.WaitingMachine{Name: m.Name, Message: brief.Truncate(c.Message, 1024)})
		}
	}
	granted := map[string]bool{} // pending grants, by Machine
	for _, g := range b.Status.DisruptedMachines {
		m, ok := selected[g.Name]
		if !ok || now.Sub(g.GrantedAt.Time) >= GrantTTL {
			continue // gone (or no longer selected), or lapsed
		}
		if tookEffectOf(m, g.Kind) {
			continue // counted as unavailable
		}
		// Still pending: kept even while the Machine is unavailable for
		// another reason (a Node flapping NotReady), or the slot would be
		// freed while the disruption is about to start.
		ev.Disrupted = append(ev.Disrupted, g)
		granted[g.Name] = true
	}
	groups := groupEveryMachine(b.Namespace, machines, selected, owners)
	for _, name := range slices.Sorted(maps.Keys(selected)) {
		m := selected[name]
		if g := groups[ownerKeyOf(m, owners)]; g != nil {
			addMachine(g, m, granted[name])
			continue
		}
		// Alone: counted as it is.
		if m.DeletionTimestamp.IsZero() {
			ev.Expected++
		}
		if down, why := machinefacts.Unavailable(m); down {
			ev.Unavailable++
			ev.Why[name] = why
		} else if granted[name] {
			ev.Unavailable++
			ev.Why[name] = "granted a disruption"
		}
	}
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		ev.Expected += g.expected()
		if n := g.unavailable(); n > 0 {
			ev.Unavailable += n
			ev.Why[key] = g.why()
		}
	}
	sort.Slice(ev.Waiting, func(i, j int) bool { return ev.Waiting[i].Name < ev.Waiting[j].Name })
	err = ev.allow(b) // before ev is read: the order of a return's operands is not specified
	return ev, err
}

func addMachine(g *ownerGroup, m *v1alpha1.Machine, granted bool) {
	if !m.DeletionTimestamp.IsZero() {
		g.deleting++
		return
	}
	g.live++
	down, _ := machinefacts.Unavailable(m)
	switch {
	case down && machinefacts.CordonedInPlace(m):
		g.cordoned++
	case down:
	case granted:
		g.granted++
	default:
		g.healthy++
	}
}

func groupEveryMachine(namespace string, machines []*v1alpha1.Machine, selected map[string]*v1alpha1.Machine, owners machineOwners) map[string]*ownerGroup {
	if owners == nil {
		return nil
	}
	groups := map[string]*ownerGroup{}
	partial := map[string]bool{}
	for _, m := range machines {
		if m.Namespace != namespace || !counted(m) {
			continue
		}
		key, replicas, ok := owners(m)
		if !ok {
			continue
		}
		if selected[m.Name] == nil {
			partial[key] = true
			continue
		}
		if groups[key] == nil {
			groups[key] = &ownerGroup{replicas: replicas}
		}
	}
	for key := range partial {
		delete(groups, key)
	}
	return groups
}

func ownerKeyOf(m *v1alpha1.Machine, owners machineOwners) string {
	if owners == nil {
		return ""
	}
	key, _, ok := owners(m)
	if !ok {
		return ""
	}
	return key
}

// overlappingEveryMachine is the Overlapping condition's names as they
// were read before the tally.
func overlappingEveryMachine(b *v1alpha1.MachineDisruptionBudget, others []v1alpha1.MachineDisruptionBudget, machines []*v1alpha1.Machine) []string {
	own, err := selector(b)
	if err != nil {
		return nil
	}
	found := map[string]bool{}
	for _, m := range machines {
		set := labels.Set(m.Labels)
		if m.Namespace != b.Namespace || !own.Matches(set) {
			continue
		}
		for i := range others {
			o := &others[i]
			if sel, err := selector(o); err == nil && o.Name != b.Name && o.Namespace == b.Namespace && sel.Matches(set) {
				found[o.Name] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(found))
}

// tookEffectOf is tookEffect as it was read of the Machine.
func tookEffectOf(m *v1alpha1.Machine, kind v1alpha1.DisruptionKind) bool {
	if !m.DeletionTimestamp.IsZero() {
		return true
	}
	switch kind {
	case v1alpha1.DisruptionRemediation:
		return m.Status.FailureReason != "" ||
			meta.IsStatusConditionFalse(m.Status.Conditions, v1alpha1.OwnerRemediatedCondition) ||
			machinefacts.RemediatedExternally(m)
	case v1alpha1.DisruptionInPlaceUpdate:
		return machinefacts.InPlaceInProgress(m) || machinefacts.InPlaceStopped(m)
	}
	return false
}
