package machine

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math/big"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

const tokenAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// bootstrapTokenID is the Machine's bootstrap token ID: derived from its
// UID, so a retried create finds the token made by the first attempt.
func bootstrapTokenID(m *v1alpha1.Machine) string {
	sum := sha256.Sum256([]byte(m.UID))
	id := make([]byte, 6)
	for i := range id {
		id[i] = tokenAlphabet[int(sum[i])%len(tokenAlphabet)]
	}
	return string(id)
}

func bootstrapTokenKey(m *v1alpha1.Machine) types.NamespacedName {
	return types.NamespacedName{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + bootstrapTokenID(m)}
}

// ensureBootstrapToken returns the Machine's bootstrap token ("id.secret"),
// creating its Secret in the target cluster's kube-system if needed. The
// token expires at the Machine's creation deadline, and is deleted once the
// Node has joined.
func (r *Reconciler) ensureBootstrapToken(ctx context.Context, s *scope) (string, error) {
	key := bootstrapTokenKey(s.machine)
	existing := &corev1.Secret{}
	err := r.TargetAPI.Get(ctx, key, existing)
	if err == nil {
		return bootstrapTokenID(s.machine) + "." + string(existing.Data["token-secret"]), nil
	}
	if !apierrors.IsNotFound(err) {
		return "", err
	}
	tokenSecret, err := randomToken(16)
	if err != nil {
		return "", err
	}
	expires := s.machine.CreationTimestamp.Add(s.life.creationTimeout).UTC().Format(time.RFC3339)
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: key.Name, Namespace: key.Namespace,
			Annotations: map[string]string{v1alpha1.NodeMachineAnnotation: s.machine.Name, v1alpha1.NodeClusterNamespaceAnnotation: s.machine.Namespace},
		},
		Type: corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			"description":                    fmt.Sprintf("Millwright bootstrap token for Machine %s/%s", s.machine.Namespace, s.machine.Name),
			"token-id":                       bootstrapTokenID(s.machine),
			"token-secret":                   tokenSecret,
			"expiration":                     expires,
			"usage-bootstrap-authentication": "true",
			"usage-bootstrap-signing":        "true",
			"auth-extra-groups":              "system:bootstrappers:millwright",
		},
	}
	if err := r.TargetAPI.Create(ctx, secret); err != nil {
		if apierrors.IsAlreadyExists(err) { // created by a concurrent attempt; use it
			return r.ensureBootstrapToken(ctx, s)
		}
		return "", err
	}
	return bootstrapTokenID(s.machine) + "." + tokenSecret, nil
}

// cleanupBootstrapToken deletes the bootstrap token once the Node joined: it
// is a credential, and nothing needs it any more.
func (r *Reconciler) cleanupBootstrapToken(ctx context.Context, s *scope) (reconcile.Result, error) {
	if !s.joined {
		return reconcile.Result{}, nil
	}
	key := bootstrapTokenKey(s.machine)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	return reconcile.Result{}, client.IgnoreNotFound(r.TargetAPI.Delete(ctx, secret))
}

func randomToken(n int) (string, error) {
	out := make([]byte, n)
	for i := range out {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(tokenAlphabet))))
		if err != nil {
			return "", err
		}
		out[i] = tokenAlphabet[k.Int64()]
	}
	return string(out), nil
}
