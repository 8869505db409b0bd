package tokenbootstrap

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/internal/provider/providerscope"
)

// kind describes TokenBootstrapConfigs to the provider scope.
var kind = &providerscope.Kind[*bootstrapv1.TokenBootstrapConfig]{
	Name:       "TokenBootstrapConfig",
	Conditions: func(cfg *bootstrapv1.TokenBootstrapConfig) *[]metav1.Condition { return &cfg.Status.Conditions },
	Failure: func(cfg *bootstrapv1.TokenBootstrapConfig) (**string, **string) {
		return &cfg.Status.FailureReason, &cfg.Status.FailureMessage
	},
	ReadyCondition:  bootstrapv1.ReadyCondition,
	PausedCondition: bootstrapv1.PausedCondition,
	PausedReason:    bootstrapv1.PausedReasonPaused,
	NotPausedReason: bootstrapv1.PausedReasonNotPaused,
	FailedReason:    bootstrapv1.ReadyReasonFailed,
	WarningReasons:  []string{bootstrapv1.ReadyReasonFailed},
}

// scope is one reconcile's view: the config being changed (cfg), its
// owner Machine and the helper writing it (see providerscope).
type scope struct {
	*providerscope.Scope[*bootstrapv1.TokenBootstrapConfig]
	r   *Reconciler
	cfg *bootstrapv1.TokenBootstrapConfig
}

func (r *Reconciler) newScope(ctx context.Context, cfg *bootstrapv1.TokenBootstrapConfig) (*scope, error) {
	ps, err := providerscope.New(ctx, kind, r.Client, r.APIReader, r.Recorder, cfg)
	if err != nil {
		return nil, err
	}
	return &scope{Scope: ps, r: r, cfg: cfg}, nil
}

// joined reports whether the owner Machine's Node has registered, now or
// before: from then on the token must not exist.
func (s *scope) joined() bool {
	return s.cfg.Status.Joined || (s.Machine != nil && s.Machine.Status.NodeRef != nil)
}

// machineFailed reports whether the owner Machine failed (its
// failureReason, which cannot be cleared, is set): it will never join, so
// its token is no longer needed.
func (s *scope) machineFailed() bool {
	return s.Machine != nil && s.Machine.Status.FailureReason != ""
}
