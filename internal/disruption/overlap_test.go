package disruption_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// twoBudgets makes budgets "pool" (over pool=a) and "cluster" (over
// cluster=prod) both selecting m, with poolAllowed and clusterAllowed left.
func twoBudgets(t *testing.T, poolAllowed, clusterAllowed int32) (string, *v1alpha1.Machine) {
	t.Helper()
	ns := namespace(t)
	budgetOf(t, ns, "pool", "a", 1, poolAllowed)
	b := budgetOf(t, ns, "cluster", "a", 2, clusterAllowed)
	// The cluster budget selects by another label, across pools.
	b.Spec.Selector.MatchLabels = map[string]string{"cluster": "prod"}
	if err := env.Client.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	b.Status.ObservedGeneration = b.Generation
	if err := env.Client.Status().Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	m := machine(t, ns, "m", "a", true)
	m.Labels["cluster"] = "prod"
	if err := env.Client.Update(ctx, m); err != nil {
		t.Fatal(err)
	}
	return ns, m
}

// TestOverlappingBudgetsEachMustAllow: a Machine two budgets select is
// disrupted only when both allow; when one does not, the other records no
// grant, and the message names the one holding it.
func TestOverlappingBudgetsEachMustAllow(t *testing.T) {
	ns, m := twoBudgets(t, 1, 0)
	d, err := gate().Request(ctx, m, v1alpha1.DisruptionScaleDown)
	if err != nil || d.Allowed {
		t.Fatalf("%+v, %v; want waiting", d, err)
	}
	if !strings.Contains(d.Message, "MachineDisruptionBudget cluster") || len(d.Budgets) != 2 {
		t.Errorf("decision %+v: want both budgets matched and cluster named", d)
	}
	if got := grantNames(getBudget(t, ns, "pool")); len(got) != 0 {
		t.Errorf("budget pool recorded %v although cluster held the Machine back", got)
	}

	ns, m = twoBudgets(t, 1, 1)
	if d, err := gate().Request(ctx, m, v1alpha1.DisruptionScaleDown); err != nil || !d.Allowed {
		t.Fatalf("%+v, %v; want Allowed", d, err)
	}
	for _, name := range []string{"pool", "cluster"} {
		if got := grantNames(getBudget(t, ns, name)); len(got) != 1 {
			t.Errorf("budget %s grants %v, want [m]", name, got)
		}
	}
}

// conflictOn answers Conflict to the status patch of one budget, as if
// another controller had just taken a disruption from it.
type conflictOn struct {
	client.Client
	budget string
}

type conflictStatus struct {
	client.SubResourceWriter
	budget string
}

func (c conflictOn) Status() client.SubResourceWriter {
	return conflictStatus{c.Client.Status(), c.budget}
}

func (s conflictStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	if obj.GetName() == s.budget {
		return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "machinedisruptionbudgets"}, obj.GetName(), nil)
	}
	return s.SubResourceWriter.Patch(ctx, obj, p, opts...)
}

// TestPartialGrantIsReleased: granted by the first budget, refused by a
// Conflict on the second, the request leaves no grant behind and answers
// the Conflict (the caller asks again).
func TestPartialGrantIsReleased(t *testing.T) {
	ns, m := twoBudgets(t, 1, 1)
	g := &disruption.Gate{Client: conflictOn{env.Client, "pool"}} // "cluster" is granted first, by name
	d, err := g.Request(ctx, m, v1alpha1.DisruptionRemediation)
	if !apierrors.IsConflict(err) || d.Allowed {
		t.Fatalf("%+v, %v; want a Conflict", d, err)
	}
	b := getBudget(t, ns, "cluster")
	if got := grantNames(b); len(got) != 0 || b.Status.DisruptionsAllowed != 1 {
		t.Errorf("budget cluster kept grants %v, allowed %d; want none, 1", got, b.Status.DisruptionsAllowed)
	}
}

// TestUnavailableMachineIsNeverHeldBack: replacing or deleting a Machine
// already down takes nothing from its budget, even an exhausted one.
func TestUnavailableMachineIsNeverHeldBack(t *testing.T) {
	ns := namespace(t)
	budgetOf(t, ns, "prod", "a", 1, 0)
	m := machine(t, ns, "broken", "a", false)
	d, err := gate().Request(ctx, m, v1alpha1.DisruptionRemediation)
	if err != nil || !d.Allowed {
		t.Fatalf("%+v, %v; want Allowed", d, err)
	}
	if got := grantNames(getBudget(t, ns, "prod")); len(got) != 0 {
		t.Errorf("grants %v for a Machine counted already", got)
	}
}

// TestBudgetNotRecountedGrantsNothing: a budget whose spec changed since
// its last count (observedGeneration behind) grants nothing.
func TestBudgetNotRecountedGrantsNothing(t *testing.T) {
	ns := namespace(t)
	b := budgetOf(t, ns, "prod", "a", 3, 3)
	b.Spec.MaxUnavailable.IntVal = 1
	if err := env.Client.Update(ctx, b); err != nil {
		t.Fatal(err)
	}
	m := machine(t, ns, "m", "a", true)
	d, err := gate().Request(ctx, m, v1alpha1.DisruptionRollout)
	if err != nil || d.Allowed || !strings.Contains(d.Message, "not recounted") {
		t.Fatalf("%+v, %v; want waiting for the recount", d, err)
	}
}

// TestNoBudgetNoGate: Machines no budget selects, and a nil Gate, are
// never held back.
func TestNoBudgetNoGate(t *testing.T) {
	ns := namespace(t)
	budgetOf(t, ns, "prod", "a", 0, 0)
	m := machine(t, ns, "m", "b", true)
	if d, err := gate().Request(ctx, m, v1alpha1.DisruptionRollout); err != nil || !d.Allowed {
		t.Fatalf("unselected: %+v, %v; want Allowed", d, err)
	}
	var g *disruption.Gate
	if d, err := g.Request(ctx, m, v1alpha1.DisruptionRollout); err != nil || !d.Allowed {
		t.Fatalf("nil gate: %+v, %v; want Allowed", d, err)
	}
}

// grantMeanwhile answers Conflict to the status patch of budget "pool",
// after another controller's grant of Machine "late" on budget "cluster".
type grantMeanwhile struct{ client.Client }

type grantMeanwhileStatus struct {
	client.SubResourceWriter
	c client.Client
}

func (c grantMeanwhile) Status() client.SubResourceWriter {
	return grantMeanwhileStatus{c.Client.Status(), c.Client}
}

func (s grantMeanwhileStatus) Patch(ctx context.Context, obj client.Object, p client.Patch, opts ...client.SubResourcePatchOption) error {
	if obj.GetName() != "pool" {
		return s.SubResourceWriter.Patch(ctx, obj, p, opts...)
	}
	other := &disruption.Gate{Client: s.c}
	late := &v1alpha1.Machine{}
	if err := s.c.Get(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: "late"}, late); err != nil {
		return err
	}
	if d, err := other.Request(ctx, late, v1alpha1.DisruptionScaleDown); err != nil || !d.Allowed {
		return fmt.Errorf("the other controller's grant: %+v, %w", d, err)
	}
	return apierrors.NewConflict(schema.GroupResource{Group: v1alpha1.GroupName, Resource: "machinedisruptionbudgets"}, obj.GetName(), nil)
}

// TestReleaseKeepsAnotherControllersGrant: two Machines asked at once,
// granted by budget "cluster" and refused by a Conflict on "pool", are
// released from "cluster"; the grant another controller made there in
// between stays.
func TestReleaseKeepsAnotherControllersGrant(t *testing.T) {
	ns, m := twoBudgets(t, 2, 3)
	m2 := machine(t, ns, "m2", "a", true)
	late := machine(t, ns, "late", "b", true) // selected by "cluster" only
	for _, x := range []*v1alpha1.Machine{m2, late} {
		x.Labels["cluster"] = "prod"
		if err := env.Client.Update(ctx, x); err != nil {
			t.Fatal(err)
		}
	}
	g := &disruption.Gate{Client: grantMeanwhile{env.Client}}
	ds, err := g.RequestAll(ctx, []disruption.Ask{{Machine: m, Kind: v1alpha1.DisruptionRollout}, {Machine: m2, Kind: v1alpha1.DisruptionRollout}})
	if !apierrors.IsConflict(err) || ds != nil {
		t.Fatalf("%+v, %v; want a Conflict and no decision", ds, err)
	}
	b := getBudget(t, ns, "cluster")
	if got := grantNames(b); !slices.Equal(got, []string{"late"}) || b.Status.DisruptionsAllowed != 2 {
		t.Errorf("budget cluster grants %v, allowed %d; want [late], 2", got, b.Status.DisruptionsAllowed)
	}
	if got := grantNames(getBudget(t, ns, "pool")); len(got) != 0 {
		t.Errorf("budget pool grants %v, want none", got)
	}
}
