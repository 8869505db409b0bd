package machinehealthcheck

import (
	"context"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// External remediation, as in Cluster API: the template's
// spec.template.spec becomes the spec of an object of the template's kind
// without "Template", named after the Machine and owned by it, for another
// controller (a reboot service, a bare-metal reprovisioner) to act on.
// These kinds are read and written unstructured, straight from the API
// server: the manager does not cache kinds it does not know.

// remediationObject is the (empty) remediation object of a Machine.
func remediationObject(mhc *v1alpha1.MachineHealthCheck, m *v1alpha1.Machine) *unstructured.Unstructured {
	ref := mhc.Spec.Remediation.TemplateRef
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ref.APIVersion)
	u.SetKind(strings.TrimSuffix(ref.Kind, "Template"))
	u.SetNamespace(m.Namespace)
	u.SetName(m.Name)
	return u
}

func (r *Reconciler) remediationExists(ctx context.Context, mhc *v1alpha1.MachineHealthCheck, m *v1alpha1.Machine) (bool, error) {
	u := remediationObject(mhc, m)
	err := r.Client.Get(ctx, client.ObjectKeyFromObject(u), u)
	switch {
	case err == nil:
		return true, nil
	case apierrors.IsNotFound(err):
		return false, nil
	default:
		return false, fmt.Errorf("reading %s %s: %w", u.GetKind(), u.GetName(), err)
	}
}

func (r *Reconciler) createRemediation(ctx context.Context, mhc *v1alpha1.MachineHealthCheck, m *v1alpha1.Machine) error {
	ref := mhc.Spec.Remediation.TemplateRef
	tpl := &unstructured.Unstructured{}
	tpl.SetAPIVersion(ref.APIVersion)
	tpl.SetKind(ref.Kind)
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: mhc.Namespace, Name: ref.Name}, tpl); err != nil {
		r.event(mhc, "Warning", ReasonTemplateNotFound, fmt.Sprintf("reading remediation template %s %s: %v", ref.Kind, ref.Name, err))
		return fmt.Errorf("reading remediation template %s %s: %w", ref.Kind, ref.Name, err)
	}
	obj := remediationObject(mhc, m)
	if spec, ok, _ := unstructured.NestedMap(tpl.Object, "spec", "template", "spec"); ok {
		obj.Object["spec"] = spec
	}
	obj.SetOwnerReferences([]metav1.OwnerReference{{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: "Machine", Name: m.Name, UID: m.UID,
		BlockOwnerDeletion: ptr.To(false),
	}})
	if err := r.Client.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		r.event(mhc, "Warning", ReasonRemediationCreateError, fmt.Sprintf("creating %s %s: %v", obj.GetKind(), obj.GetName(), err))
		return fmt.Errorf("creating %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	return nil
}

func (r *Reconciler) deleteRemediation(ctx context.Context, mhc *v1alpha1.MachineHealthCheck, m *v1alpha1.Machine) error {
	u := remediationObject(mhc, m)
	if err := r.Client.Delete(ctx, u); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", u.GetKind(), u.GetName(), err)
	}
	return nil
}
