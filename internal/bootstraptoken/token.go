// Package bootstraptoken makes Kubernetes bootstrap tokens (the Secrets of
// type bootstrap.kubernetes.io/token in kube-system that a kubelet joins
// with) for Millwright's two bootstrap paths: the machine controller's
// <<BOOTSTRAP_TOKEN>> placeholder in driver user data, and the
// TokenBootstrapConfig provider. A token's ID derives from the UID of the
// object it is made for, so a retried create finds the first attempt's
// token instead of making a second one.
package bootstraptoken

import (
	"crypto/rand"
	"crypto/sha256"
	"fmt"
	"math/big"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// alphabet is what token IDs and secrets are made of ([a-z0-9], as the
// bootstrap token format requires).
const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789"

// The keys of a bootstrap token Secret (k8s.io/cluster-bootstrap's format).
const (
	KeyID          = "token-id"
	KeySecret      = "token-secret"
	KeyExpiration  = "expiration"
	KeyDescription = "description"
	KeyExtraGroups = "auth-extra-groups"
	KeyUsageAuth   = "usage-bootstrap-authentication"
	KeyUsageSign   = "usage-bootstrap-signing"
)

// Group is the extra group every Millwright token authenticates as, beside
// system:bootstrappers: RBAC may grant joining to Millwright's nodes only.
const Group = "system:bootstrappers:millwright"

// ID is the 6-character token ID of the object with this UID: the same
// UID always gives the same ID.
func ID(uid types.UID) string {
	sum := sha256.Sum256([]byte(uid))
	id := make([]byte, 6)
	for i := range id {
		id[i] = alphabet[int(sum[i])%len(alphabet)]
	}
	return string(id)
}

// Key is where the token with this ID lives: kube-system/bootstrap-token-<id>,
// the only place the API server's bootstrap authenticator looks.
func Key(id string) types.NamespacedName {
	return types.NamespacedName{Namespace: metav1.NamespaceSystem, Name: "bootstrap-token-" + id}
}

// NewSecret returns a random 16-character token secret.
func NewSecret() (string, error) {
	out := make([]byte, 16)
	for i := range out {
		k, err := rand.Int(rand.Reader, big.NewInt(int64(len(alphabet))))
		if err != nil {
			return "", err
		}
		out[i] = alphabet[k.Int64()]
	}
	return string(out), nil
}

// Token is what a kubelet presents: "id.secret".
func Token(id, secret string) string { return id + "." + secret }

// Split parses "id.secret"; ok is false for anything else.
func Split(token string) (id, secret string, ok bool) {
	id, secret, ok = strings.Cut(token, ".")
	return id, secret, ok && len(id) == 6 && len(secret) == 16
}

// Spec says what token Secret Build makes.
type Spec struct {
	// ID and Secret are the token's two halves.
	ID, Secret string
	// Expiration is when the API server stops accepting the token.
	Expiration time.Time
	// Description says, for people, what the token is for.
	Description string
	// Annotations record whom the token was made for.
	Annotations map[string]string
}

// Build returns the token Secret: usable for authentication and for
// signing the cluster-info ConfigMap, in group Group.
func Build(s Spec) *corev1.Secret {
	key := Key(s.ID)
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace, Annotations: s.Annotations},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{
			KeyDescription: s.Description,
			KeyID:          s.ID,
			KeySecret:      s.Secret,
			KeyExpiration:  FormatExpiration(s.Expiration),
			KeyUsageAuth:   "true",
			KeyUsageSign:   "true",
			KeyExtraGroups: Group,
		},
	}
}

// FormatExpiration is the expiration as a token Secret holds it (RFC 3339, UTC).
func FormatExpiration(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// Expiration reads a token Secret's expiration; ok is false when it has
// none or it does not parse.
func Expiration(s *corev1.Secret) (time.Time, bool) {
	raw, found := s.Data[KeyExpiration]
	if !found {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, string(raw))
	return t, err == nil
}

// SecretOf is the secret half of the token a token Secret holds.
func SecretOf(s *corev1.Secret) string { return string(s.Data[KeySecret]) }

// Describe is a token's description for an object of kind namespace/name.
func Describe(kind, namespace, name string) string {
	return fmt.Sprintf("Millwright bootstrap token for %s %s/%s", kind, namespace, name)
}
