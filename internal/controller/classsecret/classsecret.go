// Package classsecret reads what a MachineClass hands its driver: the data
// of its secretRef merged with its credentialsSecretRef (credentials win).
package classsecret

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// NotFoundError says which Secret of which class is missing.
type NotFoundError struct {
	Key   types.NamespacedName
	Class string
}

func (e *NotFoundError) Error() string {
	return fmt.Sprintf("Secret %s of MachineClass %s not found", e.Key, e.Class)
}

// Read returns the class's secret data merged into one Secret (empty for a
// class without secrets). Read it with an uncached reader: the manager
// never watches every Secret of the cluster, it reads the few it needs by
// name. A referenced Secret that does not exist is a *NotFoundError.
func Read(ctx context.Context, r client.Reader, class *v1alpha1.MachineClass) (*corev1.Secret, error) {
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
			if apierrors.IsNotFound(err) {
				return nil, &NotFoundError{Key: key, Class: class.Name}
			}
			return nil, err
		}
		maps.Copy(merged.Data, secret.Data)
		for k, v := range secret.StringData {
			merged.Data[k] = []byte(v)
		}
	}
	return merged, nil
}
