// Package machinehealthcheck is the MachineHealthCheck controller: it
// judges the Machines a health check selects against its checks, records
// the verdict on each (HealthCheckSucceeded), and remediates the unhealthy
// ones within the check's budget — marking them OwnerRemediated=False for
// the machine controller and their MachineSet to replace, or creating an
// external remediation object. docs/health-checks.md describes the rules.
package machinehealthcheck

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/changed"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
	"github.com/millwright-dev/millwright/internal/disruption"
	"github.com/millwright-dev/millwright/internal/machinefacts"
	"github.com/millwright-dev/millwright/internal/patch"
)

// Reconciler reconciles MachineHealthChecks.
type Reconciler struct {
	// Client reads (from the cache) and writes the control cluster.
	Client client.Client
	// APIReader reads the control cluster without a cache: a Machine's
	// latest conditions before its owned conditions are written.
	APIReader client.Reader
	// Target reads Nodes (from the cache) of the target cluster.
	Target client.Client
	// Recorder emits Events on health checks.
	Recorder events.EventRecorder
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Gate is asked before a remediation starts: the MachineDisruptionBudgets
	// selecting the Machine must allow it (docs/disruption-budgets.md). Nil
	// allows every remediation.
	Gate *disruption.Gate
	// Views reads the Machines as the cache's own objects, not copies
	// (ownerindex.Views): a reconcile acting on a wave's new Machines
	// holds each until it ends. Nil reads them with a Get or a List.
	Views *ownerindex.Views

	// judgements keeps each health check's verdicts between its
	// reconciles, and the names of the Machines whose events (their own
	// or their Node's) arrived since (judgements.go).
	judgements changed.Store[*judged]
}

// target is one selected Machine and what the reconcile decided for it.
type target struct {
	machine  *v1alpha1.Machine // the cache's, to read only (not kept by judged)
	verdict  verdict
	conflict []string // other health checks selecting it
	// versions are the Machine's and the Node's resourceVersions judged.
	versions [2]string
}

// Reconcile judges the Machines one health check selects and remediates
// what its budget allows.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	mhc := &v1alpha1.MachineHealthCheck{}
	if err := r.Client.Get(ctx, req.NamespacedName, mhc); err != nil {
		if apierrors.IsNotFound(err) {
			forgetMetrics(req.Namespace, req.Name)
			r.judgements.Forget(req.NamespacedName)
			return reconcile.Result{}, r.withdrawOrphaned(ctx, req.Namespace)
		}
		return reconcile.Result{}, err
	}
	if !mhc.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.withdrawOrphaned(ctx, req.Namespace)
	}
	exportCounters(mhc.Namespace, mhc.Name, r.mode(mhc))
	now := time.Now()
	if r.Now != nil {
		now = r.Now()
	}
	writer := patch.New(r.Client, mhc)
	grants, err := r.remediationGrants(ctx, mhc.Namespace)
	if err != nil {
		return reconcile.Result{}, err
	}
	j, names := r.judgements.Take(req.NamespacedName)
	j, acting, err := r.judge(ctx, mhc, j, names, grants, now)
	if err != nil {
		return reconcile.Result{}, err // nothing kept: the next reconcile judges every Machine
	}
	r.judgements.Keep(req.NamespacedName, j)
	res, err := r.remediate(ctx, mhc, j, acting, now)
	if perr := writer.PatchStatus(ctx, mhc); perr != nil && err == nil {
		err = client.IgnoreNotFound(perr)
	}
	if apierrors.IsConflict(err) {
		return reconcile.Result{RequeueAfter: requeue.ConflictRetry}, nil
	}
	return requeue.Result(res, err)
}

// remediate records the verdict of each target it acts on (judge's
// acting), computes the budget and starts the remediations it allows; it
// fills mhc's status.
func (r *Reconciler) remediate(ctx context.Context, mhc *v1alpha1.MachineHealthCheck, j *judged, targets []*target,
	now time.Time) (reconcile.Result, error) {
	var unhealthy []*target
	var conflicts []string
	for _, t := range targets {
		if len(t.conflict) > 0 {
			conflicts = append(conflicts, t.machine.Name)
		} else if !t.verdict.healthy {
			unhealthy = append(unhealthy, t)
		}
	}
	res := reconcile.Result{RequeueAfter: j.recheckIn(now)}
	inFlight, err := r.inFlight(ctx, mhc, unhealthy)
	if err != nil {
		return reconcile.Result{}, err
	}
	b, err := computeBudget(&mhc.Spec.Remediation, j.expected, len(unhealthy), j.failing, len(inFlight))
	if err != nil {
		// Only a health check written around admission gets here.
		r.setStatusCondition(mhc, v1alpha1.RemediationAllowedCondition, false, "InvalidSpec", err.Error(), now)
		return reconcile.Result{}, nil
	}

	var started []string
	reasons := map[string]string{}
	firsts := 0
	for _, t := range targets {
		if len(t.conflict) == 0 && t.verdict.healthy && firstRecord(t.machine) {
			if firsts == firstRecordsPerReconcile {
				// Left active: the next reconcile, soon, judges it again.
				res = requeue.Soonest(res, reconcile.Result{RequeueAfter: firstRecordsAgain})
				continue
			}
			firsts++
		}
		// t.machine is the cache's, never written. The copy written (and
		// the API server's answer decoded into it) is dropped once acted
		// on: a reconcile acting on a wave's new Machines holds one copy
		// at a time, not one per Machine until it ends.
		m := t.machine.DeepCopy()
		switch {
		case len(t.conflict) > 0:
			err = r.setMachineConditions(ctx, m, conflictVerdict(mhc.Name, t.conflict), false, now)
		case t.verdict.healthy:
			err = r.recovered(ctx, mhc, m, now)
		default:
			reasons[m.Name] = t.verdict.message
			why, ok := remediable(m)
			switch {
			case inFlight[m.Name]:
				if mhc.Spec.Remediation.TemplateRef != nil && m.Status.FailureReason == "" {
					t.verdict.reason = ReasonExternalRemediation
				}
			case !ok:
				reasons[m.Name] += " (not remediated: " + why + ")"
				err = r.Gate.Withdraw(ctx, m, v1alpha1.DisruptionRemediation)
			case b.heldBack:
				reasons[m.Name] += " (remediation held back: too many unhealthy)"
				err = r.Gate.Withdraw(ctx, m, v1alpha1.DisruptionRemediation)
			case b.start <= 0:
				reasons[m.Name] += " (waiting: maxInFlight reached)"
				err = r.Gate.Withdraw(ctx, m, v1alpha1.DisruptionRemediation)
			default:
				d, err := r.Gate.Request(ctx, m, v1alpha1.DisruptionRemediation)
				if err != nil {
					return reconcile.Result{}, err
				}
				if !d.Allowed {
					// The budget's recount (watched) wakes the check again.
					reasons[m.Name] += " (waiting: " + d.Message + ")"
					break
				}
				b.start--
				started = append(started, m.Name)
				if err := r.start(ctx, mhc, m, t.verdict, now); err != nil {
					return reconcile.Result{}, err
				}
				continue
			}
			if err == nil {
				err = r.setMachineConditions(ctx, m, t.verdict, false, now)
			}
		}
		if err != nil {
			return reconcile.Result{}, err
		}
	}
	if len(started) > 0 {
		remediationsStarted.WithLabelValues(mhc.Namespace, mhc.Name, r.mode(mhc)).Add(float64(len(started)))
		r.event(mhc, corev1.EventTypeNormal, "RemediationStarted",
			fmt.Sprintf("remediating %d unhealthy Machine(s) (%s): %s", len(started), r.mode(mhc), strings.Join(started, ", ")))
	}
	r.fillStatus(mhc, j, unhealthy, reasons, conflicts, b, now)
	return res, nil
}

// firstRecordsPerReconcile bounds the first passing records one
// reconcile writes: a wave of new Machines that pass is recorded a
// hundred at a time, each reconcile short, instead of in one reconcile
// that writes for minutes at 5000 Machines while it judges nothing new (a
// Machine turning unhealthy meanwhile waits for it) and holds every
// Machine it read (docs/benchmarks.md, "What the health check held").
// Only first records wait: a recovery withdraws a remediation, which must
// not wait for a wave.
const firstRecordsPerReconcile = 100

// firstRecordsAgain is how soon a reconcile that left first records to
// write runs again: at once, behind what the queue holds.
const firstRecordsAgain = time.Millisecond

// firstRecord says whether a Machine judged passing has no verdict
// recorded yet, no remediation asked of its owner and no wait for a
// budget: recording it writes the first HealthCheckSucceeded of a new
// Machine. (A grant it might hold only keeps a budget's disruption
// taken a moment longer.)
func firstRecord(m *v1alpha1.Machine) bool {
	return findCondition(m, v1alpha1.HealthCheckSucceededCondition) == nil &&
		findCondition(m, v1alpha1.OwnerRemediatedCondition) == nil &&
		!disruption.WaitsFor(m, v1alpha1.DisruptionRemediation)
}

// remediable says why a Machine must not be remediated, if it must not.
func remediable(m *v1alpha1.Machine) (string, bool) {
	if _, ok := m.Annotations[v1alpha1.SkipRemediationAnnotation]; ok {
		return "annotated " + v1alpha1.SkipRemediationAnnotation, false
	}
	if _, ok := m.Annotations[v1alpha1.PausedAnnotation]; ok {
		return "the Machine is paused", false
	}
	if c := findCondition(m, v1alpha1.PausedCondition); c != nil && c.Status == "True" {
		return "the Machine is paused: " + c.Message, false
	}
	if machinefacts.InPlaceInProgress(m) {
		// Drained and rebooting on purpose: the update's updateTimeout
		// bounds it, as Cluster API spares a Machine whose update is in
		// progress (docs/health-checks.md).
		return "an in-place update is under way (" + string(m.Status.InPlaceUpdate.Phase) + ")", false
	}
	return "", true
}

func conflictVerdict(self string, others []string) verdict {
	all := append([]string{self}, others...)
	sort.Strings(all)
	return verdict{reason: ReasonSelectionConflict,
		message: "selected by more than one MachineHealthCheck (" + strings.Join(all, ", ") + "): judged by none until only one selects it"}
}

func (r *Reconciler) mode(mhc *v1alpha1.MachineHealthCheck) string {
	if mhc.Spec.Remediation.TemplateRef != nil {
		return "external"
	}
	return "owner"
}

func (r *Reconciler) event(mhc *v1alpha1.MachineHealthCheck, eventType, reason, message string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(mhc, nil, eventType, reason, "Remediate", "%s", message)
	}
	log.Log.V(1).Info("health check event", "mhc", client.ObjectKeyFromObject(mhc), "reason", reason, "message", message)
}
