package machinedeployment

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/contract"
)

// syncAutoscaler checks the cluster-autoscaler's size annotations and
// writes the scale-from-zero annotations of the deployment itself.
func (r *Reconciler) syncAutoscaler(ctx context.Context, s *scope) (reconcile.Result, error) {
	switch set, problem := checkBounds(s.md.Annotations); {
	case !set:
		meta.RemoveStatusCondition(&s.md.Status.Conditions, v1alpha1.AutoscalerBoundsCondition)
	case problem != "":
		if !meta.IsStatusConditionFalse(s.md.Status.Conditions, v1alpha1.AutoscalerBoundsCondition) {
			s.event(corev1.EventTypeWarning, reasonBoundsInvalid, problem)
		}
		s.setCondition(v1alpha1.AutoscalerBoundsCondition, metav1.ConditionFalse, reasonBoundsInvalid, problem)
	default:
		s.setCondition(v1alpha1.AutoscalerBoundsCondition, metav1.ConditionTrue, reasonBoundsValid,
			fmt.Sprintf("the cluster-autoscaler may size this group between %s and %s",
				orZero(s.md.Annotations[v1alpha1.AutoscalerMinSizeAnnotation]), orZero(s.md.Annotations[v1alpha1.AutoscalerMaxSizeAnnotation])))
	}
	if s.deleting {
		return reconcile.Result{}, nil
	}
	capacity, ok, err := r.capacityFor(ctx, s, &s.md.Spec.Template)
	if err != nil || !ok {
		return reconcile.Result{}, err
	}
	applyCapacity(&s.md.Annotations, capacity)
	return reconcile.Result{}, nil
}

func orZero(v string) string {
	if v == "" {
		return "0"
	}
	return v
}

// capacityFor is the scale-from-zero annotations of a group made from
// template. ok is false when they are not this controller's to manage: the
// class does not exist or has no nodeTemplate, the provider template
// reports no status.capacity — then a person may set them by hand.
func (r *Reconciler) capacityFor(ctx context.Context, s *scope, t *v1alpha1.MachineTemplateSpec) (map[string]string, bool, error) {
	if ref := t.Spec.InfrastructureRef; ref != nil {
		nt, err := contract.TemplateCapacity(ctx, r.Client, s.md.Namespace, ref)
		if nt == nil || err != nil {
			var problem *contract.Problem
			if errors.As(err, &problem) {
				err = nil // the template's own status and the Machines' conditions say what is wrong
			}
			return nil, false, err
		}
		return capacityAnnotations(nt, &t.Spec.NodeTemplate, s.spreadZones()), true, nil
	}
	if t.Spec.Class == nil {
		return nil, false, nil
	}
	class, err := r.class(ctx, s, t.Spec.Class.Name)
	if err != nil {
		return nil, false, err
	}
	if class == nil || class.Spec.NodeTemplate == nil {
		return nil, false, nil
	}
	return capacityAnnotations(class.Spec.NodeTemplate, &t.Spec.NodeTemplate, s.spreadZones()), true, nil
}
