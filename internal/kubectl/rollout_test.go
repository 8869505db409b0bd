package kubectl_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
	machinectrl "github.com/millwright-dev/millwright/internal/controller/machine"
	"github.com/millwright-dev/millwright/internal/controller/machinedeployment"
	"github.com/millwright-dev/millwright/internal/controller/machineset"
)

// fleetHarness runs the machine (with the in-process sim cloud), MachineSet
// and MachineDeployment controllers for one namespace, as rollouts need.
func fleetHarness(t *testing.T) *controllertest.Harness {
	return controllertest.New(t, controllertest.Options{
		Config: func(cfg *machinectrl.Config) { cfg.MaxEvictRetries = 1000 },
		Controllers: func(ctx context.Context, mgr ctrl.Manager) error {
			ms := &machineset.Reconciler{Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("machineset-controller")}
			if err := ms.SetupWithManager(ctx, mgr, 4); err != nil {
				return err
			}
			md := &machinedeployment.Reconciler{Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(),
				Recorder: mgr.GetEventRecorder("machinedeployment-controller")}
			return md.SetupWithManager(ctx, mgr, 2)
		},
	})
}

// deployment creates a MachineDeployment of replicas Machines of class.
func deployment(t *testing.T, ns, name, class string, replicas int32, edit func(*v1alpha1.MachineDeployment)) *v1alpha1.MachineDeployment {
	t.Helper()
	md := &v1alpha1.MachineDeployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: v1alpha1.MachineDeploymentSpec{
			Replicas: replicas,
			Selector: v1alpha1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: v1alpha1.MachineTemplateSpec{
				Metadata: v1alpha1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:     v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: class}},
			},
		},
	}
	if edit != nil {
		edit(md)
	}
	create(t, md)
	return md
}

func getMD(t *testing.T, ns, name string) *v1alpha1.MachineDeployment {
	t.Helper()
	md := &v1alpha1.MachineDeployment{}
	if err := controllertest.Env.Client.Get(bg, objectKey(ns, name), md); err != nil {
		t.Fatal(err)
	}
	return md
}

// TestRolloutWithControllers: status waits for a real rollout; history
// lists both revisions; undo rolls back through the controller; pause and
// resume flip spec.paused.
func TestRolloutWithControllers(t *testing.T) {
	h := fleetHarness(t)
	h.Class("small", controllertest.SimSpec)
	h.Class("large", controllertest.SimSpec)
	name := h.Prefix + "web"
	deployment(t, h.NS, name, "small", 2, nil)
	c := newCLI(t, h.NS)

	out := c.ok("rollout", "status", name, "--timeout", "2m")
	if !strings.HasSuffix(out, "machinedeployment \""+name+"\" successfully rolled out\n") {
		t.Fatalf("rollout status of a new deployment:\n%s", out)
	}
	if n := len(c.ok("get", "--deployment", name, "--phase", "Running")); n == 0 {
		t.Fatal("get --phase Running shows nothing after the rollout")
	}

	// Roll to the large class and wait through the CLI.
	md := getMD(t, h.NS, name)
	md.Spec.Template.Spec.Class.Name = "large"
	if err := controllertest.Env.Client.Update(bg, md); err != nil {
		t.Fatal(err)
	}
	out = c.ok("rollout", "status", "machinedeployment/"+name, "--timeout", "2m")
	if !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status after a template change:\n%s", out)
	}
	history := c.ok("rollout", "history", name)
	for _, want := range []string{"REVISION", "\n1 ", "small", "\n2 ", "large"} {
		if !strings.Contains(history, want) {
			t.Errorf("rollout history: no %q in\n%s", want, history)
		}
	}

	// Undo: back to revision 1's class, carried out by the controller.
	c.ok("rollout", "undo", name)
	h.Eventually(30*time.Second, "the rollback to the small class", func() (bool, error) {
		md := getMD(t, h.NS, name)
		return md.Spec.RollbackTo == nil && md.Spec.Template.Spec.Class.Name == "small", nil
	})
	out = c.ok("rollout", "status", name, "--timeout", "2m")
	if !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status after undo:\n%s", out)
	}

	// Restart: a third set of the same class replaces every Machine.
	c.ok("rollout", "restart", name)
	out = c.ok("rollout", "status", name, "--timeout", "2m")
	if !strings.Contains(out, "successfully rolled out") {
		t.Fatalf("rollout status after restart:\n%s", out)
	}
	if history := c.ok("rollout", "history", name); !strings.Contains(history, "\n3 ") {
		t.Errorf("rollout history after restart has no revision 3:\n%s", history)
	}

	if out := c.ok("rollout", "pause", name); out != "machinedeployment.machine.millwright.dev/"+name+" paused\n" {
		t.Errorf("pause: %q", out)
	}
	if !getMD(t, h.NS, name).Spec.Paused {
		t.Error("pause did not set spec.paused")
	}
	c.fails("already paused", "rollout", "pause", name)
	c.ok("rollout", "resume", name)
	if getMD(t, h.NS, name).Spec.Paused {
		t.Error("resume did not clear spec.paused")
	}
	c.fails("already resumed", "rollout", "resume", name)
}

// TestRolloutStatusStalled: a rollout whose Machines can never be made
// (their class does not exist) exceeds its progress deadline, and status
// exits non-zero saying so.
func TestRolloutStatusStalled(t *testing.T) {
	h := fleetHarness(t)
	name := h.Prefix + "stuck"
	deployment(t, h.NS, name, "missing-class", 1, func(md *v1alpha1.MachineDeployment) {
		md.Spec.ProgressDeadlineSeconds = ptrTo(int32(1))
	})
	c := newCLI(t, h.NS)
	ctx, cancel := context.WithTimeout(bg, 2*time.Minute)
	defer cancel()
	out, _, err := c.run(ctx, "rollout", "status", name)
	if err == nil || !strings.Contains(err.Error(), "exceeded its progress deadline") {
		t.Fatalf("rollout status of a stalled rollout: want a progress deadline error, got %v\n%s", err, out)
	}
	// The deadline may pass before the set's status counts its Machine;
	// that count is progress, and the deadline runs again from it. Once
	// the Machine is counted nothing more can move, so the rollout stalls
	// for good.
	h.Eventually(time.Minute, "the rollout stalled with its Machine counted", func() (bool, error) {
		md := getMD(t, h.NS, name)
		c := meta.FindStatusCondition(md.Status.Conditions, v1alpha1.ProgressingCondition)
		return md.Status.UpdatedReplicas == 1 && c != nil && c.Reason == "ProgressDeadlineExceeded", nil
	})
	// Without --watch it answers at once, with the same error.
	c.fails("exceeded its progress deadline", "rollout", "status", name, "--watch=false")
}

// TestRolloutHistoryTable: revisions from the MachineSets' annotations,
// golden; one revision's template; undo of a revision that does not exist.
func TestRolloutHistoryTable(t *testing.T) {
	const ns = "golden-history"
	namespace(t, ns)
	md := deployment(t, ns, "web", "large", 3, nil)
	for i, class := range []string{"small", "large"} {
		rev := []string{"1", "2"}[i]
		ms := &v1alpha1.MachineSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web-" + rev + rev + rev, Namespace: ns,
				Labels:      map[string]string{"app": "web", v1alpha1.MachineDeploymentNameLabel: "web"},
				Annotations: map[string]string{v1alpha1.RevisionAnnotation: rev},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineDeployment",
					Name: "web", UID: md.UID, Controller: ptrTo(true)}}},
			Spec: v1alpha1.MachineSetSpec{Replicas: int32(3 * i), Selector: md.Spec.Selector, Template: md.Spec.Template},
		}
		ms.Spec.Template.Spec.Class = &v1alpha1.MachineClassReference{Name: class}
		if i == 1 {
			ms.Annotations["kubernetes.io/change-cause"] = "kubectl apply -f web-large.yaml"
		}
		create(t, ms)
		ms.Status.Replicas = int32(3 * i)
		setStatus(t, ms)
	}
	// A MachineSet of another owner is not part of the history.
	other := &v1alpha1.MachineSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-999", Namespace: ns, Annotations: map[string]string{v1alpha1.RevisionAnnotation: "9"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineDeployment",
				Name: "web", UID: types.UID("uid-old-web"), Controller: ptrTo(true)}}},
		Spec: v1alpha1.MachineSetSpec{Selector: md.Spec.Selector, Template: md.Spec.Template},
	}
	create(t, other)

	c := newCLI(t, ns)
	golden(t, "rollout-history", c.ok("rollout", "history", "web"))
	golden(t, "rollout-history-revision", c.ok("rollout", "history", "web", "--revision", "1"))
	if out := c.ok("rollout", "history", "web", "--revision", "2", "-o", "yaml"); !strings.Contains(out, "kind: MachineSet") ||
		!strings.Contains(out, "name: web-222") {
		t.Errorf("history --revision 2 -o yaml:\n%s", out)
	}
	c.fails("unable to find the specified revision 9", "rollout", "history", "web", "--revision", "9")
	c.fails("unable to find the specified revision 9", "rollout", "undo", "web", "--to-revision", "9")
	c.ok("rollout", "undo", "web", "--to-revision", "1")
	if rb := getMD(t, ns, "web").Spec.RollbackTo; rb == nil || rb.Revision != 1 {
		t.Errorf("undo --to-revision 1: spec.rollbackTo is %+v", rb)
	}
}

// TestRolloutRestart: restart sets spec.rolloutAfter to now, and refuses
// a paused deployment as kubectl does (the controller's side is tested in
// TestRolloutWithControllers).
func TestRolloutRestart(t *testing.T) {
	const ns = "restart"
	namespace(t, ns)
	deployment(t, ns, "web", "small", 1, func(md *v1alpha1.MachineDeployment) { md.Spec.Paused = true })
	c := newCLI(t, ns)
	c.fails("can't restart paused", "rollout", "restart", "web")
	if ra := getMD(t, ns, "web").Spec.RolloutAfter; ra != nil {
		t.Errorf("restart of a paused deployment set rolloutAfter %v", ra)
	}
	c.ok("rollout", "resume", "web")
	if out := c.ok("rollout", "restart", "web"); out != "machinedeployment.machine.millwright.dev/web restarted\n" {
		t.Errorf("restart: %q", out)
	}
	if ra := getMD(t, ns, "web").Spec.RolloutAfter; ra == nil {
		t.Error("restart did not set spec.rolloutAfter")
	}
}

// TestMutatingVerbsOutput: the verbs that change an object take kubectl's
// -o name|json|yaml and print the object as written.
func TestMutatingVerbsOutput(t *testing.T) {
	const ns = "output"
	namespace(t, ns)
	deployment(t, ns, "web", "small", 1, nil)
	c := newCLI(t, ns)
	if out := c.ok("rollout", "pause", "web", "-o", "name"); out != "machinedeployment.machine.millwright.dev/web\n" {
		t.Errorf("pause -o name: %q", out)
	}
	out := c.ok("rollout", "resume", "web", "-o", "json")
	for _, want := range []string{`"kind": "MachineDeployment"`, `"name": "web"`} {
		if !strings.Contains(out, want) {
			t.Errorf("resume -o json: no %s in\n%s", want, out)
		}
	}
	if strings.Contains(out, `"paused": true`) {
		t.Errorf("resume -o json shows the deployment paused:\n%s", out)
	}
	if out := c.ok("rollout", "restart", "web", "-o", "yaml"); !strings.Contains(out, "rolloutAfter:") {
		t.Errorf("restart -o yaml shows no rolloutAfter:\n%s", out)
	}
	if out := c.ok("freeze", "machinedeployment/web", "-o", "yaml"); !strings.Contains(out, v1alpha1.FrozenLabel) {
		t.Errorf("freeze -o yaml shows no frozen label:\n%s", out)
	}
	c.fails("unable to match a printer", "rollout", "pause", "web", "-o", "wide")
	if getMD(t, ns, "web").Spec.Paused {
		t.Error("pause with a bad -o paused the deployment")
	}
}
