package tokenbootstrap

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/internal/bootstraptoken"
	"github.com/millwright-dev/millwright/internal/controller/finalizer"
)

// reconcileNormal makes or keeps the Machine's bootstrap data: the
// finalizer, the token (extended while the Machine may still join,
// deleted once it has joined or failed) and the user-data Secret, then
// the contract's status fields.
func (r *Reconciler) reconcileNormal(ctx context.Context, s *scope) (ctrl.Result, error) {
	// Without a Machine owner there is no Machine to bootstrap: the Machine
	// controller adopts the config from its spec.bootstrap.configRef.
	if s.Owner == nil {
		s.SetReady(metav1.ConditionFalse, bootstrapv1.ReadyReasonWaitingForOwner,
			"waiting for a Machine to own this config (its spec.bootstrap.configRef)")
		return ctrl.Result{}, nil
	}
	// A terminal failure is final; only deletion is handled from now on.
	if s.cfg.Status.FailureReason != nil || s.cfg.Status.FailureMessage != nil {
		return ctrl.Result{}, nil
	}
	// The finalizer, before any token can exist: a token is a credential
	// in another cluster, which no garbage collector reaches.
	if _, err := finalizer.Add(ctx, s.r.Client, bootstrapv1.TokenBootstrapConfigFinalizer, s.cfg, s.Patch.Base()); err != nil {
		return ctrl.Result{}, err
	}
	if s.joined() {
		return r.reconcileJoined(ctx, s)
	}
	if s.machineFailed() {
		return r.reconcileMachineFailed(ctx, s)
	}
	// The user data carries the Machine's spec.version, rendered once: the
	// Machine itself must be read first (the Machine watch brings the
	// config back once it is in the cache).
	if s.Machine == nil {
		s.SetReady(metav1.ConditionFalse, bootstrapv1.ReadyReasonWaitingForOwner,
			fmt.Sprintf("waiting to read Machine %s", s.Owner.Name))
		return ctrl.Result{}, nil
	}
	server, ca, problem := joinSettings(&s.cfg.Spec, r.Defaults)
	if problem != "" {
		s.Fail(bootstrapv1.FailureReasonInvalidConfiguration, problem)
		return ctrl.Result{}, nil
	}

	// The token's secret half: the user data's when it exists (that is
	// what the VM boots with), else an existing token's (made by an attempt
	// that failed before writing the user data), else a new one.
	id := bootstraptoken.ID(s.cfg.UID)
	data, conflict, err := r.getDataSecret(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	if conflict != "" {
		s.Fail(bootstrapv1.FailureReasonInvalidConfiguration, conflict)
		return ctrl.Result{}, nil
	}
	tok, conflict, err := r.getToken(ctx, s, id)
	if err != nil {
		return ctrl.Result{}, err
	}
	if conflict != "" {
		s.Fail(bootstrapv1.FailureReasonTokenConflict, conflict)
		return ctrl.Result{}, nil
	}
	var secret string
	switch {
	case data != nil:
		_, secret, _ = bootstraptoken.Split(string(data.Data[bootstrapv1.DataSecretTokenKey]))
	case tok != nil:
		secret = bootstraptoken.SecretOf(tok)
	}
	if secret == "" {
		if secret, err = bootstraptoken.NewSecret(); err != nil {
			return ctrl.Result{}, err
		}
	}
	st, err := r.ensureToken(ctx, s, tok, id, secret)
	if err != nil {
		return ctrl.Result{}, err
	}
	if data == nil {
		token := bootstraptoken.Token(id, secret)
		ud, err := UserData(JoinData{Server: server, CA: ca, Token: token, NodeName: s.Owner.Name, Version: s.Machine.Spec.Version})
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("rendering the user data: %w", err)
		}
		if err := r.createDataSecret(ctx, s, ud, token); err != nil {
			return ctrl.Result{}, err
		}
	}

	st2 := &s.cfg.Status
	st2.DataSecretName = ptr.To(s.cfg.Name)
	st2.Ready = true
	st2.Initialization = &bootstrapv1.TokenBootstrapConfigInitializationStatus{DataSecretCreated: true}
	st2.TokenID = id
	st2.TokenExpiration = &metav1.Time{Time: st.expires.Truncate(time.Second)}
	s.SetReady(metav1.ConditionTrue, bootstrapv1.ReadyReasonReady,
		fmt.Sprintf("user data is in Secret %s; token %s is valid until %s", s.cfg.Name, id, st.expires.UTC().Format(time.RFC3339)))
	// Come back to extend the token once half of its life is left; the
	// Machine watch brings us back earlier when the Node joins.
	return ctrl.Result{RequeueAfter: max(time.Until(st.expires)-tokenTTL(s.cfg)/2, time.Second)}, nil
}

// reconcileJoined deletes the token once the Machine's Node registered:
// the kubelet has its own certificate by then, and a bootstrap token is a
// credential nobody needs any more. The user data stays (the Machine's
// contract fields point at it), its token no longer works.
func (r *Reconciler) reconcileJoined(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.deleteToken(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	st := &s.cfg.Status
	st.Joined = true
	st.TokenExpiration = nil
	status := metav1.ConditionFalse
	if st.Ready {
		status = metav1.ConditionTrue
	}
	s.SetReady(status, bootstrapv1.ReadyReasonJoined, "the Machine's Node joined; its bootstrap token is deleted")
	return ctrl.Result{}, nil
}

// reconcileMachineFailed deletes the token once the owner Machine failed
// before its Node joined: a failed Machine never joins (its failure is
// final), yet preservation may keep it for days, and a token extended all
// that time would be a live credential in a VM nobody watches. The user
// data stays, as after a join.
func (r *Reconciler) reconcileMachineFailed(ctx context.Context, s *scope) (ctrl.Result, error) {
	if err := r.deleteToken(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	st := &s.cfg.Status
	st.TokenExpiration = nil
	status := metav1.ConditionFalse
	if st.Ready {
		status = metav1.ConditionTrue
	}
	s.SetReady(status, bootstrapv1.ReadyReasonMachineFailed,
		fmt.Sprintf("Machine %s failed (%s) before its Node joined; its bootstrap token is deleted", s.Owner.Name, s.Machine.Status.FailureReason))
	return ctrl.Result{}, nil
}
