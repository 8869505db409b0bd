package tokenbootstrap

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
	"github.com/millwright-dev/millwright/internal/bootstraptoken"
)

// ownerUIDAnnotation on a token Secret is the UID of the config it was
// made for: a token with the config's ID but another UID is someone
// else's (6 characters of a hash do collide, rarely), never to be reused.
const ownerUIDAnnotation = bootstrapv1.GroupName + "/config-uid"

// tokenTTL is spec.tokenTTL or the default.
func tokenTTL(cfg *bootstrapv1.TokenBootstrapConfig) time.Duration {
	if cfg.Spec.TokenTTL != nil && cfg.Spec.TokenTTL.Duration > 0 {
		return cfg.Spec.TokenTTL.Duration
	}
	return bootstrapv1.DefaultTokenTTL
}

// tokenState is the token as this reconcile left it.
type tokenState struct {
	id, secret string
	expires    time.Time
}

// getToken reads the config's token Secret from the target cluster; nil
// when there is none. conflict says why an existing one is not ours.
func (r *Reconciler) getToken(ctx context.Context, s *scope, id string) (tok *corev1.Secret, conflict string, err error) {
	tok = &corev1.Secret{}
	if err := r.Target.Get(ctx, bootstraptoken.Key(id), tok); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", nil
		}
		return nil, "", fmt.Errorf("reading the bootstrap token: %w", err)
	}
	if uid := tok.Annotations[ownerUIDAnnotation]; uid != string(s.cfg.UID) {
		return nil, fmt.Sprintf("bootstrap token Secret %s in the target cluster belongs to config UID %q, not this one: replace the Machine for a new token ID",
			bootstraptoken.Key(id), uid), nil
	}
	return tok, "", nil
}

// ensureToken makes the token exist in the target cluster with secret and
// enough life left: created if missing (also after kube-controller-manager
// collected it expired, while the manager was down: the VM may still be
// booting with it), extended by the TTL once less than half of it is
// left, and set back to secret if it differs (the user data is what the
// VM boots with, and it is never rewritten).
func (r *Reconciler) ensureToken(ctx context.Context, s *scope, existing *corev1.Secret, id, secret string) (tokenState, error) {
	ttl := tokenTTL(s.cfg)
	now := time.Now()
	st := tokenState{id: id, secret: secret, expires: now.Add(ttl)}
	if existing == nil {
		tok := bootstraptoken.Build(bootstraptoken.Spec{
			ID: id, Secret: secret, Expiration: st.expires,
			Description: bootstraptoken.Describe(Kind, s.cfg.Namespace, s.cfg.Name),
			Annotations: map[string]string{ownerUIDAnnotation: string(s.cfg.UID)},
		})
		if err := r.Target.Create(ctx, tok); err != nil {
			// AlreadyExists: a concurrent attempt made it; the next
			// reconcile reads and checks it.
			return tokenState{}, fmt.Errorf("creating the bootstrap token: %w", err)
		}
		s.Log.Info("created bootstrap token", "tokenID", id, "expiration", st.expires)
		return st, nil
	}
	expires, ok := bootstraptoken.Expiration(existing)
	if ok && expires.Sub(now) > ttl/2 && bootstraptoken.SecretOf(existing) == secret {
		st.expires = expires
		return st, nil
	}
	patched := existing.DeepCopy()
	if patched.Data == nil {
		patched.Data = map[string][]byte{}
	}
	patched.Data[bootstraptoken.KeyExpiration] = []byte(bootstraptoken.FormatExpiration(st.expires))
	patched.Data[bootstraptoken.KeySecret] = []byte(secret)
	// The optimistic lock makes two concurrent extensions one.
	if err := r.Target.Patch(ctx, patched, client.MergeFromWithOptions(existing, client.MergeFromWithOptimisticLock{})); err != nil {
		return tokenState{}, fmt.Errorf("extending the bootstrap token: %w", err)
	}
	s.Log.V(1).Info("extended bootstrap token", "tokenID", id, "expiration", st.expires)
	return st, nil
}

// deleteToken deletes the config's token from the target cluster, if it
// is there and ours.
func (r *Reconciler) deleteToken(ctx context.Context, s *scope) error {
	id := bootstraptoken.ID(s.cfg.UID)
	tok, conflict, err := r.getToken(ctx, s, id)
	if err != nil || tok == nil || conflict != "" {
		return err
	}
	key := bootstraptoken.Key(id)
	gone := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	// The UID precondition deletes exactly the token that was read.
	if err := r.Target.Delete(ctx, gone, client.Preconditions{UID: &tok.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the bootstrap token: %w", err)
	}
	s.Log.Info("deleted bootstrap token", "tokenID", id)
	return nil
}
