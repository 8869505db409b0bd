package tokenbootstrap

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	bootstrapv1 "github.com/millwright-dev/millwright/api/bootstrap/v1alpha1"
)

// The user-data Secret: named after its config, in its namespace, with
// the contract's key "value", and owned by the config, so that the garbage
// collector deletes it with the config. The controller never deletes it
// itself: that would take the right to delete every Secret of every
// namespace, which the manager must not have (test/deploy/rbac_test.go).

// getDataSecret reads the config's user-data Secret; nil when there is
// none. conflict says why an existing one is not the config's.
func (r *Reconciler) getDataSecret(ctx context.Context, s *scope) (sec *corev1.Secret, conflict string, err error) {
	sec = &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(s.cfg), sec); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, "", nil
		}
		return nil, "", fmt.Errorf("reading the user-data Secret: %w", err)
	}
	if !metav1.IsControlledBy(sec, s.cfg) {
		return nil, fmt.Sprintf("Secret %s/%s exists and is not this TokenBootstrapConfig's user data", sec.Namespace, sec.Name), nil
	}
	return sec, "", nil
}

// createDataSecret writes the user data once. It is never rewritten: the
// VM may already be booting with it.
func (r *Reconciler) createDataSecret(ctx context.Context, s *scope, data []byte, token string) error {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: s.cfg.Namespace, Name: s.cfg.Name,
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: bootstrapv1.GroupVersion.String(), Kind: Kind, Name: s.cfg.Name, UID: s.cfg.UID,
				Controller: ptr.To(true),
			}},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{
			bootstrapv1.DataSecretKey:       data,
			bootstrapv1.DataSecretFormatKey: []byte("cloud-config"),
			bootstrapv1.DataSecretTokenKey:  []byte(token),
		},
	}
	if err := r.Client.Create(ctx, sec); err != nil {
		// AlreadyExists: a concurrent attempt made it; the next reconcile
		// reads it and uses its token.
		return fmt.Errorf("creating the user-data Secret: %w", err)
	}
	s.Log.Info("created user-data Secret", "secret", sec.Name)
	return nil
}
