package machinedeployment_test

import (
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// A deployment whose name has the longest a label value allows (63
// characters) still rolls out: its MachineSet and Machine names, which end
// up in label values (set-name, the Node's hostname), are kept to 63.
func TestLongDeploymentNameRollsOut(t *testing.T) {
	h := newHarness(t)
	h.Class("small", controllertest.SimSpec)
	name := strings.Repeat("n", validation.LabelValueMaxLength-len(h.Prefix))
	h.deployment(name, 2, "small", nil)
	h.waitComplete(name, 60*time.Second)

	check := func(kind, n string) {
		if errs := validation.IsValidLabelValue(n); len(errs) > 0 {
			t.Errorf("%s name %q (%d characters) is no label value: %v", kind, n, len(n), errs)
		}
	}
	sets := h.sets(name)
	if len(sets) != 1 {
		t.Fatalf("%d MachineSets; want 1", len(sets))
	}
	check("MachineSet", sets[0].Name)
	machines := h.machines(name)
	if len(machines) != 2 {
		t.Fatalf("%d Machines; want 2", len(machines))
	}
	for _, m := range machines {
		check("Machine", m.Name)
		if m.Labels[v1alpha1.MachineSetNameLabel] != sets[0].Name {
			t.Errorf("Machine %s: set-name label %q; want %q", m.Name, m.Labels[v1alpha1.MachineSetNameLabel], sets[0].Name)
		}
	}

	// One character more could not be a label value: refused at once.
	long := h.md(name).DeepCopy()
	long.ObjectMeta = metav1.ObjectMeta{Name: long.Name + "x", Namespace: h.NS}
	if err := controllertest.Env.Client.Create(ctx, long); !apierrors.IsInvalid(err) {
		t.Fatalf("creating a MachineDeployment named with %d characters: %v; want Invalid", len(long.Name), err)
	}
}
