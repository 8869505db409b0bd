package simmachine

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	infrav1 "github.com/millwright-dev/millwright/api/infrastructure/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/providerscope"
)

// kind describes SimMachines to the provider scope.
var kind = &providerscope.Kind[*infrav1.SimMachine]{
	Name:       "SimMachine",
	Conditions: func(sm *infrav1.SimMachine) *[]metav1.Condition { return &sm.Status.Conditions },
	Failure: func(sm *infrav1.SimMachine) (**string, **string) {
		return &sm.Status.FailureReason, &sm.Status.FailureMessage
	},
	ReadyCondition:  infrav1.ReadyCondition,
	PausedCondition: infrav1.PausedCondition,
	PausedReason:    infrav1.PausedReasonPaused,
	NotPausedReason: infrav1.PausedReasonNotPaused,
	FailedReason:    infrav1.ReadyReasonFailed,
	WarningReasons:  []string{infrav1.ReadyReasonFailed, infrav1.ReadyReasonDeletionFailed},
}

// scope is one reconcile's view: the SimMachine being changed (sm), its
// owner Machine and the helper writing it (see providerscope).
type scope struct {
	*providerscope.Scope[*infrav1.SimMachine]
	r  *Reconciler
	sm *infrav1.SimMachine
}

func (r *Reconciler) newScope(ctx context.Context, sm *infrav1.SimMachine) (*scope, error) {
	ps, err := providerscope.New(ctx, kind, r.Client, r.APIReader, r.Recorder, sm)
	if err != nil {
		return nil, err
	}
	return &scope{Scope: ps, r: r, sm: sm}, nil
}

// patchMeta applies mutate to the metadata or spec and patches them at
// once, keeping the status to be written at the end.
func (s *scope) patchMeta(ctx context.Context, mutate func(*infrav1.SimMachine)) error {
	mutate(s.sm)
	return s.Patch.PatchObject(ctx, s.sm)
}
