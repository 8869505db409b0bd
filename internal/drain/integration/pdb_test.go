package integration

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
)

// A PodDisruptionBudget that allows no disruption makes the Eviction API
// refuse; the drain retries for MaxEvictRetries refused rounds and then
// deletes the pods. The budget's status comes from the real disruption
// controller.
func TestDrainBudgetBlocksUntilMaxEvictRetriesThenDeletes(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, true)
	guarded := map[string]string{"app": "db"}
	db0 := newPod(t, ns, node.Name, "db-0", withLabels(guarded))
	db1 := newPod(t, ns, node.Name, "db-1", withLabels(guarded))
	free := newPod(t, ns, node.Name, "free")
	waitRunning(t, db0, db1, free)
	newPDB(t, ns, guarded, 2, 2) // both must stay available: no eviction allowed

	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, MaxEvictRetries: 2, Now: everyRetryInterval()}
	for round := int32(1); round <= 2; round++ {
		res := step(t, status, opts)
		if res.Blocked != 2 || res.Deleted != 0 || res.Done {
			t.Fatalf("round %d: %+v, want both guarded pods blocked, none deleted", round, res)
		}
		if status.Attempts != round {
			t.Fatalf("round %d: attempts %d, want %d", round, status.Attempts, round)
		}
		want := "2 blocked by PodDisruptionBudget (attempt " + string(rune('0'+round)) + "/2"
		if !strings.Contains(res.Message, want) {
			t.Errorf("round %d: message %q does not contain %q", round, res.Message, want)
		}
		if round == 1 && res.Evicted != 1 {
			t.Errorf("round 1 evicted %d pods, want the unguarded one", res.Evicted)
		}
		mustExistUntouched(t, db0, db1)
	}

	// Round 3 is one refusal more than allowed: the pods are deleted.
	res := step(t, status, opts)
	if res.Deleted != 2 || res.Blocked != 0 || status.Attempts != 3 {
		t.Fatalf("round 3: %+v, attempts %d; want both guarded pods deleted after the third refusal", res, status.Attempts)
	}
	if !strings.Contains(res.Message, "deleted 2 pods after 3 refused eviction rounds") {
		t.Errorf("round 3 message %q does not say the pods were deleted after 3 refused rounds", res.Message)
	}
	stepUntilDone(t, status, opts, nil)
	mustBeGone(t, db0, db1, free)
}

// A Step called again right after a refused round, as happens when the
// Machine's own status write wakes it, makes no round: the retries are
// spent at the retry interval, not as fast as the controller is woken.
func TestDrainRoundsArePaced(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, true)
	guarded := map[string]string{"app": "db"}
	db0 := newPod(t, ns, node.Name, "db-0", withLabels(guarded))
	waitRunning(t, db0)
	newPDB(t, ns, guarded, 1, 1) // no eviction allowed

	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, MaxEvictRetries: 1}
	if res := step(t, status, opts); res.Blocked != 1 || status.Attempts != 1 {
		t.Fatalf("first round: %+v, attempts %d; want the pod blocked once", res, status.Attempts)
	}
	for i := range 5 {
		res := step(t, status, opts)
		if status.Attempts != 1 || res.Blocked+res.Deleted+res.Evicted != 0 || res.Done {
			t.Fatalf("early call %d: %+v, attempts %d; want no round", i, res, status.Attempts)
		}
		if res.RequeueAfter <= 0 || res.RequeueAfter > drain.DefaultRetryInterval || !strings.Contains(res.Message, "next round in") {
			t.Fatalf("early call %d: requeue %s, message %q; want the rest of the retry interval", i, res.RequeueAfter, res.Message)
		}
	}
	mustExistUntouched(t, db0)
}

// everyRetryInterval is a clock that moves one retry interval each time it
// is read: every Step runs as if the controller had waited its RequeueAfter.
func everyRetryInterval() func() time.Time {
	now := time.Now()
	return func() time.Time {
		now = now.Add(drain.DefaultRetryInterval)
		return now
	}
}

// A budget that allows one disruption lets exactly one of two parallel
// evictions through; when the budget is relaxed before the retries run out
// the other pod is evicted, not deleted.
func TestDrainBudgetAllowsOneThenFreesUp(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, true)
	guarded := map[string]string{"app": "web"}
	web0 := newPod(t, ns, node.Name, "web-0", withLabels(guarded))
	web1 := newPod(t, ns, node.Name, "web-1", withLabels(guarded))
	waitRunning(t, web0, web1)
	pdb := newPDB(t, ns, guarded, 1, 2) // one of two may go

	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: node.Name, MaxEvictRetries: 5, Now: everyRetryInterval()}
	res := step(t, status, opts)
	if res.Evicted != 1 || res.Blocked != 1 || status.Attempts != 1 {
		t.Fatalf("first round: %+v, attempts %d; want one pod evicted and one blocked", res, status.Attempts)
	}

	// The evicted pod disappears; with one healthy pod left and one
	// required, the budget now refuses the other.
	evicted, kept := web0, web1
	if !deletionStarted(t, web0) {
		evicted, kept = web1, web0
	}
	waitGone(t, evicted)
	waitPDB(t, pdb, 1)
	res = step(t, status, opts)
	if res.Blocked != 1 || res.Evicted != 0 || res.Deleted != 0 {
		t.Fatalf("second round: %+v, want the remaining pod blocked", res)
	}
	// Only a refused pod is left: nothing changes until the budget frees
	// up, so the drain asks to be called back at the slower retry pace.
	if res.RequeueAfter != drain.DefaultRetryInterval {
		t.Errorf("second round requeues after %s, want the retry interval %s", res.RequeueAfter, drain.DefaultRetryInterval)
	}
	mustExistUntouched(t, kept)

	// A merge patch, not an update: the disruption controller writes the
	// budget's status concurrently, and an update of the copy read above
	// would conflict with it.
	relaxed := client.MergeFrom(pdb.DeepCopy())
	pdb.Spec.MinAvailable = ptr.To(intstr.FromInt32(0))
	if err := env.Client.Patch(t.Context(), pdb, relaxed); err != nil {
		t.Fatal(err)
	}
	waitPDB(t, pdb, 1)
	stepUntilDone(t, status, opts, func(res drain.Result) {
		if res.Deleted != 0 {
			t.Errorf("a pod was deleted although the budget freed up within the retries: %+v", res)
		}
	})
	mustBeGone(t, web0, web1)
	if status.Attempts != 2 {
		t.Errorf("attempts %d, want 2 refused rounds", status.Attempts)
	}
}

// A forced drain deletes every pod at once with grace period 0, budgets,
// volumes and earlier volume waits notwithstanding; DaemonSet pods stay.
func TestDrainForceDeletesEverything(t *testing.T) {
	ns := newNamespace(t)
	node := newNode(t, true)
	guarded := map[string]string{"app": "db"}
	var leave []*corev1.Pod
	for _, name := range []string{"db-0", "db-1"} {
		leave = append(leave, newPod(t, ns, node.Name, name, withLabels(guarded)))
	}
	leave = append(leave,
		newPod(t, ns, node.Name, "pg-0", withClaim("data-pg-0")),
		newPod(t, ns, node.Name, "pg-1", withClaim("data-pg-1")),
		newPod(t, ns, node.Name, "free"))
	agent := newPod(t, ns, node.Name, "agent-x", ownedBy(newDaemonSet(t, ns), "DaemonSet"))
	waitRunning(t, append(leave, agent)...)
	newPDB(t, ns, guarded, 2, 2)

	status := &v1alpha1.DrainStatus{Attempts: 1, VolumeWait: &v1alpha1.VolumeWait{Pod: ns + "/pg-0", VolumeIDs: []string{"vol-a"}}}
	opts := drain.Options{NodeName: node.Name, Force: true, MaxEvictRetries: 10}
	res := step(t, status, opts)
	if res.Deleted != len(leave) || res.Evicted != 0 || res.Blocked != 0 {
		t.Fatalf("forced step: %+v, want all %d pods deleted at once", res, len(leave))
	}
	if status.VolumeWait != nil {
		t.Errorf("forced step kept the volume wait %+v", status.VolumeWait)
	}
	if !strings.Contains(res.Message, "force-deleted 5 pods") {
		t.Errorf("message %q does not say it force-deleted 5 pods", res.Message)
	}
	// Grace period 0: the API server removes them at once, kwok need not act.
	mustBeGone(t, leave...)
	stepUntilDone(t, status, opts, nil)
	mustExistUntouched(t, agent)
}

// A pod the drain deletes instead of evicting carries the DisruptionTarget
// condition first, saying why (a budget that refused too long, a forced
// drain); an evicted pod carries the API server's own. Each pod keeps a
// finalizer so that its last version can be read.
func TestDrainDeletionsSayWhy(t *testing.T) {
	ns := newNamespace(t)
	guarded := map[string]string{"app": "db"}
	refusedNode, forcedNode := newNode(t, true), newNode(t, true)
	refused := newPod(t, ns, refusedNode.Name, "db-0", withLabels(guarded), withFinalizer)
	evicted := newPod(t, ns, refusedNode.Name, "free", withFinalizer)
	forced := newPod(t, ns, forcedNode.Name, "other", withFinalizer)
	waitRunning(t, refused, evicted, forced)
	newPDB(t, ns, guarded, 1, 1)
	releaseFinalizersAtEnd(t, refused, evicted, forced)

	status := &v1alpha1.DrainStatus{}
	opts := drain.Options{NodeName: refusedNode.Name, MaxEvictRetries: 1, Now: everyRetryInterval()}
	step(t, status, opts) // refused once; the other pod evicted
	if res := step(t, status, opts); res.Deleted != 1 {
		t.Fatalf("second round: %+v, want the guarded pod deleted", res)
	}
	if res := step(t, &v1alpha1.DrainStatus{}, drain.Options{NodeName: forcedNode.Name, Force: true}); res.Deleted != 1 {
		t.Fatalf("forced round: %+v, want the pod deleted", res)
	}

	for _, tc := range []struct {
		pod            *corev1.Pod
		reason, saying string
	}{
		{refused, drain.DisruptionReason, "PodDisruptionBudget refused its eviction"},
		{forced, drain.DisruptionReason, "was forced"},
		{evicted, "EvictionByEvictionAPI", ""},
	} {
		cond := deletingDisruptionTarget(t, tc.pod)
		if cond == nil || cond.Status != corev1.ConditionTrue || cond.Reason != tc.reason || !strings.Contains(cond.Message, tc.saying) {
			t.Errorf("pod %s: DisruptionTarget %+v, want reason %s saying %q", tc.pod.Name, cond, tc.reason, tc.saying)
		}
	}
}
