package tokenbootstrap

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/finalizer"
)

// reconcileDelete deletes the token from the target cluster, then removes
// the finalizer. The token is a credential in another cluster, which no
// garbage collector reaches: only the finalizer keeps it from being
// forgotten. The user-data Secret goes with the config, its owner, through
// the garbage collector.
func (r *Reconciler) reconcileDelete(ctx context.Context, s *scope) (ctrl.Result, error) {
	if !controllerutil.ContainsFinalizer(s.cfg, bootstrapv1.TokenBootstrapConfigFinalizer) {
		return ctrl.Result{}, nil
	}
	s.SetReady(metav1.ConditionFalse, bootstrapv1.ReadyReasonDeleting, "deleting the bootstrap token")
	if err := r.deleteToken(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	// The status first: once the finalizer is gone, so is the object.
	if err := s.PatchStatus(ctx); err != nil {
		return ctrl.Result{}, err
	}
	_, err := finalizer.Remove(ctx, s.r.Client, bootstrapv1.TokenBootstrapConfigFinalizer, s.cfg, s.Patch.Base())
	return ctrl.Result{}, err
}
