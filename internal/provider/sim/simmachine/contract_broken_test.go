package simmachine

import (
	"context"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/pkg/contracttest"
)

// eager is a broken InfraMachine provider: it "provisions" every SimMachine
// at once, without waiting for a Machine owner or for bootstrap data.
type eager struct{ client.Client }

func (e eager) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	sm := &infrav1.SimMachine{}
	if err := e.Get(ctx, req.NamespacedName, sm); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if sm.Spec.ProviderID == nil {
		base := sm.DeepCopy()
		sm.Spec.ProviderID = ptr.To("eager:///" + sm.Namespace + "/" + sm.Name)
		if err := e.Patch(ctx, sm, client.MergeFrom(base)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if !sm.Status.Ready {
		base := sm.DeepCopy()
		sm.Status.Ready = true
		sm.Status.Initialization = &infrav1.SimMachineInitializationStatus{Provisioned: true}
		return ctrl.Result{}, e.Status().Patch(ctx, sm, client.MergeFrom(base))
	}
	return ctrl.Result{}, nil
}

// TestContractRejectsAnEagerProvider shows the suite can fail: run against
// the eager provider (in a child process, with a control plane of its own),
// it must fail the two workflow rules that provider breaks.
func TestContractRejectsAnEagerProvider(t *testing.T) {
	if os.Getenv("CONTRACTTEST_BROKEN") == "1" {
		env.StartManager(t, scheme(), func(mgr ctrl.Manager) error {
			return ctrl.NewControllerManagedBy(mgr).For(&infrav1.SimMachine{}).Complete(eager{mgr.GetClient()})
		})
		contracttest.Run(t, contracttest.Config{
			RESTConfig:           env.Config,
			InfraMachine:         infrav1.GroupVersion.WithKind("SimMachine"),
			InfraMachineTemplate: infrav1.GroupVersion.WithKind("SimMachineTemplate"),
			NewInfraMachine:      func(contracttest.Variant) *unstructured.Unstructured { return simMachine(validSpec) },
			Skip: []contracttest.Rule{contracttest.RuleAddresses, contracttest.RuleConditions,
				contracttest.RuleTerminalFailures, contracttest.RulePausing},
			Timeout: 30 * time.Second,
		})
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestContractRejectsAnEagerProvider$", "-test.v")
	cmd.Env = append(os.Environ(), "CONTRACTTEST_BROKEN=1")
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the contract suite passed a provider that provisions without owner or bootstrap data:\n%s", out)
	}
	for _, rule := range []contracttest.Rule{contracttest.RuleNoOwnerNoProgress, contracttest.RuleWaitsForBootstrapData} {
		if !strings.Contains(string(out), "--- FAIL: TestContractRejectsAnEagerProvider/"+string(rule)+" ") {
			t.Errorf("the suite did not fail rule %s:\n%s", rule, out)
		}
	}
	if want := "--- PASS: TestContractRejectsAnEagerProvider/" + string(contracttest.RuleProviderID) + " "; !strings.Contains(string(out), want) {
		t.Errorf("the suite failed rule %s, which the eager provider keeps:\n%s", contracttest.RuleProviderID, out)
	}
}
