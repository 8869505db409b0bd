package machineset

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/contract"
)

// cloneTemplates turns the provider templates m's spec references
// (spec.infrastructureRef to e.g. a SimMachineTemplate, and
// spec.bootstrap.configRef unless bootstrap data is given) into objects of
// m's own, named after it, and points m at them. On failure it deletes
// what it made and returns the error. It returns what it made, for the
// caller to delete should the Machine itself not be created.
func (r *Reconciler) cloneTemplates(ctx context.Context, ms *v1alpha1.MachineSet, m *v1alpha1.Machine) ([]*v1alpha1.ContractReference, error) {
	var made []*v1alpha1.ContractReference
	clone := func(ref **v1alpha1.ContractReference) error {
		if *ref == nil {
			return nil
		}
		c, err := contract.CloneFromTemplate(ctx, r.Client, contract.Clone{
			Template: *ref, Namespace: m.Namespace, Name: m.Name, Labels: m.Labels,
			// The MachineSet controls the clone until the Machine adopts it.
			Owner: metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet",
				Name: ms.Name, UID: ms.UID, Controller: ptr.To(true)},
		})
		if err != nil {
			return err
		}
		made = append(made, c)
		*ref = c
		return nil
	}
	err := clone(&m.Spec.InfrastructureRef)
	if err == nil && m.Spec.Bootstrap.DataSecretName == nil {
		err = clone(&m.Spec.Bootstrap.ConfigRef)
	}
	if err != nil {
		r.deleteClones(ctx, m.Namespace, made)
		return nil, err
	}
	return made, nil
}

// deleteClones deletes clones whose Machine was never created. A failure
// is only logged: the clone is owned by the MachineSet, so the garbage
// collector removes it with the MachineSet at the latest.
func (r *Reconciler) deleteClones(ctx context.Context, namespace string, clones []*v1alpha1.ContractReference) {
	for _, ref := range clones {
		if err := contract.Delete(ctx, r.Client, namespace, ref); err != nil {
			log.FromContext(ctx).Error(err, "deleting a clone whose Machine was not created", "kind", ref.Kind, "name", ref.Name)
		}
	}
}
