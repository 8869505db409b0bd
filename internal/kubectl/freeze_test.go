package kubectl_test

import (
	"testing"
	"time"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/controllertest"
)

// TestFreezeStopsScaleUp: frozen, a MachineDeployment is not scaled up by
// its controller; unfrozen, it is.
func TestFreezeStopsScaleUp(t *testing.T) {
	h := fleetHarness(t)
	h.Class("small", controllertest.SimSpec)
	name := h.Prefix + "frozen"
	deployment(t, h.NS, name, "small", 1, nil)
	c := newCLI(t, h.NS)
	c.ok("rollout", "status", name, "--timeout", "2m")

	if out := c.ok("freeze", "machinedeployment/"+name); out != "machinedeployment.machine.millwright.dev/"+name+" frozen\n" {
		t.Errorf("freeze: %q", out)
	}
	if out := c.ok("freeze", "mcd/"+name); out != "machinedeployment.machine.millwright.dev/"+name+" already frozen\n" {
		t.Errorf("freeze twice: %q", out)
	}
	md := getMD(t, h.NS, name)
	if md.Labels[v1alpha1.FrozenLabel] != "true" {
		t.Fatalf("freeze: labels %v", md.Labels)
	}
	md.Spec.Replicas = 2
	if err := controllertest.Env.Client.Update(bg, md); err != nil {
		t.Fatal(err)
	}
	machines := func() (int, error) {
		list := &v1alpha1.MachineList{}
		err := controllertest.Env.Client.List(bg, list, inNamespace(h.NS))
		return len(list.Items), err
	}
	h.Consistently(3*time.Second, "one Machine while frozen", func() (bool, error) {
		n, err := machines()
		return n == 1, err
	})

	c.ok("unfreeze", "machinedeployment/"+name)
	md = getMD(t, h.NS, name)
	if _, frozen := md.Labels[v1alpha1.FrozenLabel]; frozen || md.Annotations[v1alpha1.UnfreezeAnnotation] != "true" {
		t.Fatalf("unfreeze: labels %v, annotations %v", md.Labels, md.Annotations)
	}
	h.Eventually(time.Minute, "the scale-up once unfrozen", func() (bool, error) {
		n, err := machines()
		return n == 2, err
	})
	if out := c.ok("unfreeze", "machinedeployment/"+name); out != "machinedeployment.machine.millwright.dev/"+name+" not frozen\n" {
		t.Errorf("unfreeze twice: %q", out)
	}
}
