package machine

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/classsecret"
)

// Placeholders in user data, replaced per Machine; the URL-encoded forms
// are replaced too, for user data embedded in URLs.
const (
	machineNamePlaceholder    = "<<MACHINE_NAME>>"
	bootstrapTokenPlaceholder = "<<BOOTSTRAP_TOKEN>>"
	userDataKey               = "userData"
	bootstrapDataKey          = "value"
)

var urlEncoded = strings.NewReplacer("<", "%3C", ">", "%3E")

// driverSecret returns the Secret to hand to the driver for creating this
// Machine's VM: the class's secrets, with the Machine's bootstrap data as
// userData and its placeholders replaced. nil when something is missing;
// the BootstrapReady condition then says what.
func (r *Reconciler) driverSecret(ctx context.Context, s *scope, class *v1alpha1.MachineClass) (*corev1.Secret, error) {
	secret, err := classsecret.Read(ctx, r.APIReader, class)
	var missing *classsecret.NotFoundError
	if errors.As(err, &missing) {
		r.missing(s, v1alpha1.BootstrapReadyCondition, ReasonSecretNotFound, missing.Error())
		return nil, nil
	}
	var refused *classsecret.OtherNamespaceError
	if errors.As(err, &refused) {
		r.missing(s, v1alpha1.BootstrapReadyCondition, ReasonSecretRefused, refused.Error())
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	userData, ok, err := r.bootstrapData(ctx, s, secret)
	if err != nil || !ok {
		return nil, err
	}
	if strings.Contains(userData, bootstrapTokenPlaceholder) || strings.Contains(userData, urlEncoded.Replace(bootstrapTokenPlaceholder)) {
		token, err := r.ensureBootstrapToken(ctx, s)
		if err != nil {
			return nil, fmt.Errorf("creating the bootstrap token: %w", err)
		}
		userData = replacePlaceholder(userData, bootstrapTokenPlaceholder, token)
	} else {
		r.tokenless.add(s.machine.UID)
	}
	userData = replacePlaceholder(userData, machineNamePlaceholder, s.machine.Name)
	secret.Data[userDataKey] = []byte(userData)
	bootstrapReady(s)
	return secret, nil
}

// bootstrapReady records that the Machine's bootstrap data is in the
// driver's Secret.
func bootstrapReady(s *scope) {
	s.setCondition(v1alpha1.BootstrapReadyCondition, metav1.ConditionTrue, ReasonBootstrapDataReady, "bootstrap data is available")
}

// bootstrapData returns the Machine's bootstrap data: the Secret named by
// spec.bootstrap.dataSecretName, else the class secret's userData.
func (r *Reconciler) bootstrapData(ctx context.Context, s *scope, classSecret *corev1.Secret) (string, bool, error) {
	b := s.machine.Spec.Bootstrap
	if b.DataSecretName == nil {
		if b.ConfigRef != nil {
			r.missing(s, v1alpha1.BootstrapReadyCondition, ReasonBootstrapDataMissing,
				"waiting for "+b.ConfigRef.Kind+" "+b.ConfigRef.Name+" to provide bootstrap data")
			return "", false, nil
		}
		return string(classSecret.Data[userDataKey]), true, nil
	}
	key := types.NamespacedName{Namespace: s.machine.Namespace, Name: *b.DataSecretName}
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, key, secret); err != nil {
		if apierrors.IsNotFound(err) {
			r.missing(s, v1alpha1.BootstrapReadyCondition, ReasonSecretNotFound, "bootstrap data Secret "+key.String()+" not found")
			return "", false, nil
		}
		return "", false, err
	}
	data, ok := secret.Data[bootstrapDataKey]
	if !ok {
		r.missing(s, v1alpha1.BootstrapReadyCondition, ReasonBootstrapDataMissing, "bootstrap data Secret "+key.String()+" has no key \"value\"")
		return "", false, nil
	}
	return string(data), true, nil
}

func replacePlaceholder(data, placeholder, value string) string {
	data = strings.ReplaceAll(data, placeholder, value)
	return strings.ReplaceAll(data, urlEncoded.Replace(placeholder), value)
}
