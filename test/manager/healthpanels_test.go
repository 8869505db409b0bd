package manager_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// remediateAndPreserve gives the dashboard's "Health checks and
// preservation" row its data from md's Running Machines: a health check
// over them with a Ready=False timeout of one second, one Node made
// NotReady through the sim's admin API so that the health check
// remediates its Machine (mode owner: its MachineSet replaces it), and
// another Machine preserved with machine.millwright.dev/preserve: now
// (docs/health-checks.md, docs/preservation.md). The health check's
// short-circuit gauge reads 0 meanwhile: a gauge at 0 is data, so the
// short-circuit panel needs no second health check (one selecting the
// same Machines would conflict and judge none).
func remediateAndPreserve(t *testing.T, md *v1alpha1.MachineDeployment, simAdmin string, mgr *managerProc) {
	t.Helper()
	ctx := context.Background()
	ns := md.Namespace
	list := &v1alpha1.MachineList{}
	if err := env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(md.Spec.Selector.MatchLabels)); err != nil {
		t.Fatal(err)
	}
	var running []v1alpha1.Machine
	for _, m := range list.Items {
		if m.DeletionTimestamp == nil && m.Status.Phase == v1alpha1.PhaseRunning && m.Status.NodeRef != nil {
			running = append(running, m)
		}
	}
	if len(running) < 2 {
		t.Fatalf("%d Running Machines with a Node in %s, want 2: one to remediate, one to preserve", len(running), ns)
	}
	unhealthy, preserved := running[0], running[1]

	create(t, &v1alpha1.MachineHealthCheck{
		ObjectMeta: metav1.ObjectMeta{Name: md.Name, Namespace: ns},
		Spec: v1alpha1.MachineHealthCheckSpec{
			Selector: md.Spec.Selector,
			Checks: v1alpha1.MachineHealthCheckChecks{UnhealthyNodeConditions: []v1alpha1.UnhealthyNodeCondition{
				{Type: string(corev1.NodeReady), Status: string(corev1.ConditionFalse), Timeout: metav1.Duration{Duration: time.Second}},
			}},
		},
	})
	simPost(t, simAdmin, "/nodes/"+unhealthy.Status.NodeRef.Name+"/not-ready", "")

	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{v1alpha1.PreserveAnnotation: v1alpha1.PreserveNow}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Client.Patch(ctx, &preserved, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("annotating Machine %s: %v", preserved.Name, err)
	}

	testenv.Eventually(t, 60*time.Second, fmt.Sprintf("a remediation of %s and %s preserved", unhealthy.Name, preserved.Name), func() (bool, error) {
		body, err := mgr.scrape()
		if err != nil {
			return false, err
		}
		remediated, _ := metric(body, "millwright_machinehealthcheck_remediations_total", label("namespace", ns), label("machinehealthcheck", md.Name), label("mode", "owner"))
		held, seen := metric(body, "millwright_machinehealthcheck_short_circuited", label("namespace", ns), label("machinehealthcheck", md.Name))
		kept, _ := metric(body, "millwright_machines_preserved", label("namespace", ns), label("reason", v1alpha1.PreservedNowReason))
		if remediated >= 1 && seen && kept >= 1 {
			return true, nil
		}
		return false, fmt.Errorf("remediations (owner) %v, short-circuited %v (exported %t), preserved %v", remediated, held, seen, kept)
	})
}
