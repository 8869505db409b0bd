package machinedisruptionbudget

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/disruption"
)

// owners reads, from the cache, the MachineSets and MachineDeployments of
// the namespace, and tells Evaluate each set's top owner and its size:
// the deployment of the Machine's MachineSet, or the set itself when no
// deployment controls it (docs/disruption-budgets.md).
func (r *Reconciler) owners(ctx context.Context, namespace string) (disruption.Owners, error) {
	sets := &v1alpha1.MachineSetList{}
	if err := r.Client.List(ctx, sets, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	deployments := &v1alpha1.MachineDeploymentList{}
	if err := r.Client.List(ctx, deployments, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	mdReplicas := map[string]int32{}
	for i := range deployments.Items {
		md := &deployments.Items[i]
		mdReplicas[md.Name] = size(md.Spec.Replicas, md.DeletionTimestamp)
	}
	type owner struct {
		key      string
		replicas int32
	}
	bySet := map[string]owner{}
	for i := range sets.Items {
		ms := &sets.Items[i]
		if ref := metav1.GetControllerOf(ms); ref != nil && ref.Kind == "MachineDeployment" {
			if n, ok := mdReplicas[ref.Name]; ok {
				bySet[ms.Name] = owner{"MachineDeployment/" + ref.Name, n}
			}
			continue // a deployment not in the cache yet: its Machines count alone
		}
		bySet[ms.Name] = owner{"MachineSet/" + ms.Name, size(ms.Spec.Replicas, ms.DeletionTimestamp)}
	}
	return func(set string) (string, int32, bool) {
		o, ok := bySet[set]
		return o.key, o.replicas, ok
	}, nil
}

// size is an owner's spec.replicas; 0 once it is being deleted (its
// Machines are all going).
func size(replicas int32, deleting *metav1.Time) int32 {
	if deleting != nil {
		return 0
	}
	return replicas
}
