package integration

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/drain"
)

// An eviction the Eviction API approved but did not carry out (its caller,
// a manager, was killed between the API server's two writes: the budget's
// status.disruptedPods, then the pod's deletion) leaves the pod running and
// counted as disrupted; the budget refuses every eviction for two minutes.
// The drain carries the approval out by deleting the pod, within the budget:
// the other guarded pod stays refused. TestCrashSafety saw the refusals run
// out (MaxEvictRetries) and pods deleted past the budget.
func TestDrainCarriesOutAnApprovedEviction(t *testing.T) {
	for _, tc := range []struct {
		name string
		// age is how old the approval is when the drain runs.
		age time.Duration
		// carriedOut: the drain deletes the approved pod.
		carriedOut bool
	}{
		{"fresh", 0, true},
		// Past the window the controller may count the pod healthy again.
		{"too old", 90 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			node := newNode(t, true)
			guarded := map[string]string{"app": "db"}
			approved := newPod(t, ns, node.Name, "db-0", withLabels(guarded), withFinalizer)
			other := newPod(t, ns, node.Name, "db-1", withLabels(guarded))
			waitRunning(t, approved, other)
			releaseFinalizersAtEnd(t, approved)
			pdb := newPDB(t, ns, guarded, 1, 2) // one of two may go

			// The Eviction API's first write for db-0, as an aborted call leaves it.
			now := time.Now()
			pdb.Status.DisruptedPods = map[string]metav1.Time{approved.Name: metav1.NewTime(now)}
			pdb.Status.DisruptionsAllowed = 0
			if err := env.Client.Status().Update(t.Context(), pdb); err != nil {
				t.Fatal(err)
			}
			waitPDB(t, pdb, 1) // the disruption controller counts db-0 as disrupted

			status := &v1alpha1.DrainStatus{}
			res := step(t, status, drain.Options{NodeName: node.Name, MaxEvictRetries: 5,
				Now: func() time.Time { return now.Add(tc.age) }})
			if !tc.carriedOut {
				if res.Blocked != 2 || res.Evicted+res.Deleted != 0 {
					t.Fatalf("step: %+v, want both pods refused: the approval is too old to act on", res)
				}
				mustExistUntouched(t, approved, other)
				return
			}
			if res.Evicted != 1 || res.Blocked != 1 || res.Deleted != 0 {
				t.Fatalf("step: %+v, want db-0's approved eviction carried out and db-1 refused", res)
			}
			mustExistUntouched(t, other)
			if cond := deletingDisruptionTarget(t, approved); cond == nil || cond.Reason != drain.ApprovedEvictionReason || !strings.Contains(cond.Message, "approved") {
				t.Errorf("db-0: DisruptionTarget %+v, want reason %s", cond, drain.ApprovedEvictionReason)
			}
		})
	}
}
