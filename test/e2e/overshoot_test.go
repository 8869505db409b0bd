package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// TestOvershootFreeze proves scenario 7c, the overshoot freeze of the
// safety controller (--safety-up 1 --safety-down 1): a MachineSet of 2
// replicas in a MachineDeployment of maxSurge 1 freezes when 4 of its
// Machines (not being deleted) exist, and unfreezes at 3.
//
// The real MachineSet controller deletes any surplus Machine at once, so
// an overshoot is made to last the way a runaway would: an admission
// policy (ValidatingAdmissionPolicy) refuses every deletion of a Machine
// of the scenario except the test's own (an impersonated user), and 3
// extra Machines controlled by the MachineSet are created. The
// MachineDeployment is then paused, so that Machines the test deletes
// stay "being deleted" (their finalizer held) until it resumes.
//
// It checks, at every observed state until the resume, that no Machine
// but these 5 is ever created; and at the end of each step:
//   - with 5 Machines the MachineSet and its MachineDeployment carry the
//     machine.millwright.dev/frozen label and a True Frozen condition;
//   - scaling the MachineDeployment to 3 (limit 5, still frozen with 5)
//     grows no MachineSet: its spec.replicas stays 2;
//   - once the test deleted 4 of the 5 Machines (which stay being deleted
//     while paused), the MachineSet, 1 short of its replicas, still creates
//     none while its label says frozen;
//   - after resuming, the deleted Machines go through their deletion
//     steps, the count (1) is under the unfreeze mark, label and
//     conditions are removed, and the fleet grows to 3 Running Machines.
//
// The overshooting period is long (3m) so that only events (Machines
// created or gone, a changed spec) re-judge the freeze within the test.
func TestOvershootFreeze(t *testing.T) {
	s := newScenario(t, "overshoot")
	s.startManager("--safety-up", "1", "--safety-down", "1", "--machine-safety-overshooting-period", "3m")
	s.createClass("small", simSpec)
	s.createDeployment(2, "small", 1, 0)
	before := s.waitFleet(2, "small", 2*time.Minute)
	rec := s.record()
	ms := s.machineSet()

	deleter := s.blockMachineDeletions()

	// The frozen MachineSet must not create a Machine: none but these 5.
	names := []string{before[0].Name, before[1].Name}
	for i := range 3 {
		names = append(names, fmt.Sprintf("%s-extra%d", ms.Name, i))
	}
	stopCheck := rec.addCheck(func(r *recorder) string {
		for _, m := range r.machinesLocked() {
			if !slices.Contains(names, m.Name) {
				return fmt.Sprintf("Machine %s was created while the MachineSet was frozen", m.Name)
			}
		}
		return ""
	})
	for _, name := range names[2:] {
		extra := before[0].DeepCopy()
		extra.ObjectMeta = metav1.ObjectMeta{Name: name, Namespace: s.ns, Labels: before[0].Labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ms, v1alpha1.GroupVersion.WithKind("MachineSet"))}}
		extra.Spec = *ms.Spec.Template.Spec.DeepCopy()
		extra.Status = v1alpha1.MachineStatus{}
		s.create(extra)
	}
	s.waitFrozen(true)
	// The extra Machines are provisioned like any: the MachineSet cannot
	// delete them.
	s.eventually(2*time.Minute, "the 5 Machines Running", func() (bool, error) {
		ms, err := s.machines()
		running := 0
		for _, m := range ms {
			if m.Status.Phase == v1alpha1.PhaseRunning && m.DeletionTimestamp == nil {
				running++
			}
		}
		return running == 5, fmt.Errorf("%d Running (%v)", running, err)
	})

	s.updateDeployment(func(md *v1alpha1.MachineDeployment) { md.Spec.Paused = true })
	s.eventually(time.Minute, "the Machines to be paused", func() (bool, error) {
		ms, err := s.machines()
		for _, m := range ms {
			if !meta.IsStatusConditionTrue(m.Status.Conditions, v1alpha1.PausedCondition) {
				return false, fmt.Errorf("%s is not paused", m.Name)
			}
		}
		return err == nil, err
	})

	s.scale(3)
	s.consistently(8*time.Second, "the frozen MachineDeployment not to grow its MachineSet", func() error {
		if got := s.machineSet(); got.Spec.Replicas != 2 {
			return fmt.Errorf("MachineSet %s has spec.replicas %d", got.Name, got.Spec.Replicas)
		}
		return s.frozenIs(true)
	})

	for _, name := range append(names[2:], names[0]) {
		m := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.ns}}
		if err := deleter.Delete(context.Background(), m); err != nil {
			t.Fatalf("deleting Machine %s: %v", name, err)
		}
	}
	s.consistently(8*time.Second, "the frozen MachineSet, 1 Machine short, not to create one", func() error {
		ms, err := s.machines()
		if err != nil {
			return err
		}
		alive := 0
		for _, m := range ms {
			if m.DeletionTimestamp == nil {
				alive++
			}
		}
		if alive != 1 {
			return fmt.Errorf("%d Machines not being deleted, want 1", alive)
		}
		return s.frozenIs(true)
	})

	stopCheck()
	s.updateDeployment(func(md *v1alpha1.MachineDeployment) { md.Spec.Paused = false })
	s.waitFrozen(false)
	s.waitFleet(3, "small", 3*time.Minute)
	rec.verify()
	s.checkNoDuplicateVMs()
}

// machineSet returns the scenario's only MachineSet.
func (s *scenario) machineSet() *v1alpha1.MachineSet {
	s.t.Helper()
	list := &v1alpha1.MachineSetList{}
	if err := k8s.List(context.Background(), list, client.InNamespace(s.ns)); err != nil {
		s.t.Fatal(err)
	}
	if len(list.Items) != 1 {
		s.t.Fatalf("%d MachineSets, want 1", len(list.Items))
	}
	return &list.Items[0]
}

// frozenIs checks the frozen label and the Frozen condition of the
// MachineSet and of the MachineDeployment.
func (s *scenario) frozenIs(frozen bool) error {
	ms := s.machineSet()
	md := &v1alpha1.MachineDeployment{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: s.ns, Name: s.ns}, md); err != nil {
		return err
	}
	for _, o := range []struct {
		kind   string
		labels map[string]string
		conds  []metav1.Condition
	}{{"MachineSet", ms.Labels, ms.Status.Conditions}, {"MachineDeployment", md.Labels, md.Status.Conditions}} {
		_, label := o.labels[v1alpha1.FrozenLabel]
		cond := meta.IsStatusConditionTrue(o.conds, v1alpha1.FrozenCondition)
		if label != frozen || cond != frozen {
			return fmt.Errorf("%s: frozen label %t, Frozen condition %t; want %t", o.kind, label, cond, frozen)
		}
	}
	return nil
}

func (s *scenario) waitFrozen(frozen bool) {
	s.t.Helper()
	s.eventually(time.Minute, fmt.Sprintf("frozen=%t on the MachineSet and MachineDeployment", frozen), func() (bool, error) {
		err := s.frozenIs(frozen)
		return err == nil, err
	})
}

// consistently fails the test if cond fails at any poll during d.
func (s *scenario) consistently(d time.Duration, what string, cond func() error) {
	s.t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(500 * time.Millisecond) {
		if err := cond(); err != nil {
			s.t.Fatalf("%s: %s: %v", s.ns, what, err)
		}
	}
}

// blockMachineDeletions makes the API server refuse to delete any Machine
// of the scenario, for every user but the one of the returned client,
// until the test ends.
func (s *scenario) blockMachineDeletions() client.Client {
	s.t.Helper()
	const user = "e2e-deleter"
	ctx := context.Background()
	name := "e2e-" + s.ns + "-no-machine-deletion"
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Delete},
					Rule: admissionv1.Rule{APIGroups: []string{v1alpha1.GroupVersion.Group}, APIVersions: []string{"*"},
						Resources: []string{"machines"}},
				},
			}}},
			Validations: []admissionv1.Validation{{
				Expression: "request.userInfo.username == '" + user + "'",
				Message:    "e2e: only the test deletes Machines here (a runaway's surplus must stay)",
			}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": s.ns}}},
		},
	}
	s.create(policy)
	s.create(binding)
	s.t.Cleanup(func() {
		_ = k8s.Delete(ctx, binding)
		_ = k8s.Delete(ctx, policy)
	})
	cfg := cluster.RESTConfig()
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user, Groups: []string{"system:masters"}}
	deleter, err := client.New(cfg, client.Options{Scheme: testenv.Scheme()})
	if err != nil {
		s.t.Fatal(err)
	}
	// The policy is in force once a dry-run deletion is refused.
	ms, err := s.machines()
	if err != nil || len(ms) == 0 {
		s.t.Fatalf("no Machine to try the policy on (%v)", err)
	}
	s.eventually(30*time.Second, "the admission policy to refuse Machine deletions", func() (bool, error) {
		err := k8s.Delete(ctx, &ms[0], client.DryRunAll)
		return err != nil, nil
	})
	if err := deleter.Delete(ctx, &ms[0], client.DryRunAll); err != nil {
		s.t.Fatalf("the test's own deletions are refused too: %v", err)
	}
	return deleter
}
