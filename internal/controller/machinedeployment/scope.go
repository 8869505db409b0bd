package machinedeployment

import (
	"context"
	"time"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment/plan"
	"github.com/millwright-dev/millwright/internal/patch"
)

// scope is everything one reconcile of one MachineDeployment knows and
// changes. Steps change s.md and the sets; the reconciler writes the
// deployment's status once, at the end.
type scope struct {
	r  *Reconciler
	md *v1alpha1.MachineDeployment
	// patch writes the deployment's changes since it was read; its status
	// only on the version read (WithStatusLock): the cache can be behind
	// this controller's own last status write, and counts and conditions
	// computed from it would undo the newer ones.
	patch *patch.Helper
	key   string
	now   time.Time
	log   logr.Logger

	selector           labels.Selector
	surge, unavailable int32
	frozen, deleting   bool
	classes            map[string]*v1alpha1.MachineClass
	classesMissing     map[string]bool
	createdNewSet      bool
	newRevision        int64
	stop, skipStatus   bool

	// sets are the owned MachineSets, oldest first, deleting ones included.
	sets []*v1alpha1.MachineSet
	// machines are each owned set's Machines, being deleted or not. They
	// are the cache's own objects (see collect): read only.
	// Left empty when tallied: the counts then come from the
	// Reconciler's tallies, and machineCounts says how many each set has
	// (preserved and deleting ones included) either way.
	machines      map[types.UID][]*v1alpha1.Machine
	machineCounts map[types.UID]int
	tallied       bool
	// counts are each owned set's Machines as the planner counts them;
	// nextAvailable is how long until the next Ready Machine becomes
	// available (0: none pending).
	counts        map[types.UID]plan.Counts
	nextAvailable time.Duration
	// scaled says what scaleSet did in this reconcile, for one Event.
	scaled []string
	// newSet is the set of the current template; nil until it exists.
	newSet *v1alpha1.MachineSet
	// oldSets are the other owned sets, oldest first.
	oldSets []*v1alpha1.MachineSet
	// inPlaceSettings are strategy.inPlace resolved (nil unless InPlace);
	// inPlace is what this reconcile's in-place plan found.
	inPlaceSettings *plan.InPlaceSettings
	inPlace         *plan.InPlaceReport
	// budgetAsked: this reconcile asked the budgets for its in-place
	// starts; budgetWait says, when a start waits, for what (budget.go).
	budgetAsked bool
	budgetWait  string
	// spread is spec.failureDomains resolved (syncSpread); nil without.
	spread *spreadState
}

// planSets are the sets as the planner (and the revision arithmetic) sees
// them.
func (s *scope) planSets(sets []*v1alpha1.MachineSet) []plan.Set {
	out := make([]plan.Set, 0, len(sets))
	for _, ms := range sets {
		out = append(out, s.planSet(ms))
	}
	return out
}

// set finds an owned set by name.
func (s *scope) set(name string) *v1alpha1.MachineSet {
	for _, ms := range s.sets {
		if ms.Name == name {
			return ms
		}
	}
	return nil
}

// patchSet applies mutate to ms and writes what changed, refusing to write
// over a change of the set's spec, or of an annotation it writes, that it
// has not seen (patch.PatchObjectLocked): a decision made on a stale set
// must be made again. The set's status writes (the MachineSet
// controller's, several per second in a rollout) do not refuse it: they
// change nothing the decision was made from.
func (s *scope) patchSet(ctx context.Context, ms *v1alpha1.MachineSet, mutate func(*v1alpha1.MachineSet)) (bool, error) {
	h := patch.New(s.r.Client, ms)
	base := h.Base().(*v1alpha1.MachineSet)
	mutate(ms)
	if equality.Semantic.DeepEqual(base.ObjectMeta, ms.ObjectMeta) && equality.Semantic.DeepEqual(base.Spec, ms.Spec) {
		return false, nil
	}
	generation := base.Generation
	if err := h.PatchObjectLocked(ctx, ms); err != nil {
		*ms = *base.DeepCopy()
		return false, err
	}
	if ms.Generation != generation {
		s.r.expectations.expectGeneration(s.key, ms.UID, ms.Generation)
	}
	return true, nil
}

// readStatus is the deployment's status as this reconcile read it (or last
// wrote it).
func (s *scope) readStatus() *v1alpha1.MachineDeploymentStatus {
	return &s.patch.Base().(*v1alpha1.MachineDeployment).Status
}

// setCondition sets a condition; its transition time moves only when its
// status does.
func (s *scope) setCondition(condType string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&s.md.Status.Conditions, metav1.Condition{
		Type: condType, Status: status, Reason: reason, Message: message,
		ObservedGeneration: s.md.Generation, LastTransitionTime: metav1.NewTime(s.now),
	})
}

func (s *scope) event(eventType, reason, message string) {
	if s.r.Recorder != nil {
		s.r.Recorder.Eventf(s.md, nil, eventType, reason, "Reconcile", "%s", message)
	}
}
