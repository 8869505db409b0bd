package ownerindex

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// ClassIndex is the cache index of Machines, MachineSets and
// MachineDeployments by the name of the MachineClass they use (a
// Machine's spec.class, a set's or deployment's template's): a class's
// controller counts its users, the machine and deployment controllers
// find what a class change concerns. One index for all of them: each
// index on a kind costs a set entry per object, twice (its namespace's
// and every namespace's).
const ClassIndex = "millwright.class.name"

// RegisterClass adds ClassIndex on each kind of objs (Machines,
// MachineSets, MachineDeployments) to mgr's cache, unless an earlier
// RegisterClass already did.
func RegisterClass(ctx context.Context, mgr ctrl.Manager, objs ...client.Object) error {
	return register(ctx, mgr, ClassIndex, "class", func(o client.Object) []string {
		if c := ClassOf(o); c != nil {
			return []string{c.Name}
		}
		return nil
	}, objs)
}

// ClassOf is the MachineClass o uses: a Machine's spec.class, a
// MachineSet's or MachineDeployment's template's; nil for none or
// another kind.
func ClassOf(o client.Object) *v1alpha1.MachineClassReference {
	switch o := o.(type) {
	case *v1alpha1.Machine:
		return o.Spec.Class
	case *v1alpha1.MachineSet:
		return o.Spec.Template.Spec.Class
	case *v1alpha1.MachineDeployment:
		return o.Spec.Template.Spec.Class
	}
	return nil
}
