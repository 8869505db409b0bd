package safety

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// classSecret merges a class's secretRef and credentialsSecretRef, as the
// machine controller hands them to the driver. Secrets are read without a
// cache, by name: the manager never watches every Secret.
func classSecret(ctx context.Context, r client.Reader, class *v1alpha1.MachineClass) (*corev1.Secret, error) {
	merged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: class.Name, Namespace: class.Namespace}, Data: map[string][]byte{}}
	for _, ref := range []*corev1.SecretReference{class.Spec.SecretRef, class.Spec.CredentialsSecretRef} {
		if ref == nil {
			continue
		}
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		if key.Namespace == "" {
			key.Namespace = class.Namespace
		}
		secret := &corev1.Secret{}
		if err := r.Get(ctx, key, secret); err != nil {
			return nil, fmt.Errorf("secret %s of MachineClass %s: %w", key, class.Name, err)
		}
		maps.Copy(merged.Data, secret.Data)
		for k, v := range secret.StringData {
			merged.Data[k] = []byte(v)
		}
	}
	return merged, nil
}
