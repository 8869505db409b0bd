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

// OtherNamespaceError says which reference of which class names a Secret
// of another namespace than the class's.
type OtherNamespaceError struct {
	Field string
	Key   types.NamespacedName
	Class types.NamespacedName
}

func (e *OtherNamespaceError) Error() string {
	return fmt.Sprintf("MachineClass %s: %s names Secret %s, of another namespace: a class reads Secrets of its own namespace only", e.Class, e.Field, e.Key)
}

// Read returns the class's secret data merged into one Secret (empty for a
// class without secrets). Read it with an uncached reader: the manager
// never watches every Secret of the cluster, it reads the few it needs by
// name. A referenced Secret that does not exist is a *NotFoundError. A
// reference to another namespace is an *OtherNamespaceError, and that
// Secret is not read: the manager reads with its own identity, so whoever
// may write a class would otherwise hand the driver (and the VM's user
// data) any Secret of the cluster whose name they know
// (docs/security.md).
func Read(ctx context.Context, r client.Reader, class *v1alpha1.MachineClass) (*corev1.Secret, error) {
	merged := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: class.Name, Namespace: class.Namespace}, Data: map[string][]byte{}}
	refs := []struct {
		field string
		ref   *corev1.SecretReference
	}{{"spec.secretRef", class.Spec.SecretRef}, {"spec.credentialsSecretRef", class.Spec.CredentialsSecretRef}}
	for _, f := range refs {
		ref := f.ref
		if ref == nil {
			continue
		}
		key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
		if key.Namespace == "" {
			key.Namespace = class.Namespace
		}
		if key.Namespace != class.Namespace {
			return nil, &OtherNamespaceError{Field: f.field, Key: key, Class: client.ObjectKeyFromObject(class)}
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
