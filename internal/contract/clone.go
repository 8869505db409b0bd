package contract

import (
	"context"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// TemplateSuffix ends the kind of every provider template: the template of
// an InfraMachine kind is named <InfraMachine>Template
// (docs/contract-providers.md).
const TemplateSuffix = "Template"

// Clone says what CloneFromTemplate makes.
type Clone struct {
	// Template is the *Template object to clone.
	Template *v1alpha1.ContractReference
	// Namespace and Name of the new object: a Machine's, so that the
	// object is found from its Machine and never made twice for one.
	Namespace, Name string
	// Labels are added to the template's own labels.
	Labels map[string]string
	// Owner becomes the new object's controller owner until its Machine
	// adopts it (the MachineSet creating the Machine).
	Owner metav1.OwnerReference
}

// CloneFromTemplate creates the object a provider's *Template describes in
// spec.template (metadata and spec), of the template's kind without its
// Template suffix, with the cloned-from annotations (docs/contract-providers.md,
// "Templates and cloning"), and returns a reference to it.
func CloneFromTemplate(ctx context.Context, c client.Client, o Clone) (*v1alpha1.ContractReference, error) {
	kind, ok := strings.CutSuffix(o.Template.Kind, TemplateSuffix)
	if !ok || kind == "" {
		return nil, &Problem{ReasonContractViolation,
			fmt.Sprintf("%s is not a template kind: a MachineSet's template references *%s objects", o.Template.Kind, TemplateSuffix)}
	}
	tmpl, err := getTemplate(ctx, c, o.Namespace, o.Template)
	if err != nil {
		return nil, err
	}
	gvk := tmpl.GroupVersionKind()
	spec, _, _ := unstructured.NestedMap(tmpl.Object, "spec", "template", "spec")
	labels, _, _ := unstructured.NestedStringMap(tmpl.Object, "spec", "template", "metadata", "labels")
	annotations, _, _ := unstructured.NestedStringMap(tmpl.Object, "spec", "template", "metadata", "annotations")

	obj := &unstructured.Unstructured{Object: map[string]any{}}
	obj.SetGroupVersionKind(gvk.GroupVersion().WithKind(kind))
	obj.SetNamespace(o.Namespace)
	obj.SetName(o.Name)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, o.Labels)
	obj.SetLabels(labels)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[v1alpha1.ClonedFromNameAnnotation] = o.Template.Name
	annotations[v1alpha1.ClonedFromGroupKindAnnotation] = gvk.GroupKind().String()
	obj.SetAnnotations(annotations)
	obj.SetOwnerReferences([]metav1.OwnerReference{o.Owner})
	if spec != nil {
		if err := unstructured.SetNestedMap(obj.Object, spec, "spec"); err != nil {
			return nil, err
		}
	}
	if err := c.Create(ctx, obj); err != nil {
		return nil, fmt.Errorf("creating %s %s from %s %s: %w", kind, o.Name, o.Template.Kind, o.Template.Name, err)
	}
	return &v1alpha1.ContractReference{APIGroup: o.Template.APIGroup, Kind: kind, Name: o.Name}, nil
}

// Delete deletes the object ref points at, if it exists (the clean-up of
// a clone whose Machine could not be created).
func Delete(ctx context.Context, c client.Client, namespace string, ref *v1alpha1.ContractReference) error {
	gvk, err := GVK(ctx, c, ref)
	if err != nil {
		return err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(namespace)
	obj.SetName(ref.Name)
	return client.IgnoreNotFound(c.Delete(ctx, obj))
}

// TemplateCapacity returns what a node made from the provider template ref
// points at will have, from the template's status.capacity (resource name
// to quantity), for the scale-from-zero annotations; nil when the template
// reports none.
func TemplateCapacity(ctx context.Context, c client.Client, namespace string, ref *v1alpha1.ContractReference) (*v1alpha1.NodeTemplate, error) {
	tmpl, err := getTemplate(ctx, c, namespace, ref)
	if err != nil {
		return nil, err
	}
	raw, _, _ := unstructured.NestedStringMap(tmpl.Object, "status", "capacity")
	if len(raw) == 0 {
		return nil, nil
	}
	capacity := corev1.ResourceList{}
	for name, q := range raw {
		v, err := resource.ParseQuantity(q)
		if err != nil {
			return nil, &Problem{ReasonContractViolation, fmt.Sprintf("%s %s: status.capacity[%s] %q is not a quantity", ref.Kind, ref.Name, name, q)}
		}
		capacity[corev1.ResourceName(name)] = v
	}
	return &v1alpha1.NodeTemplate{Capacity: capacity}, nil
}

// getTemplate reads the provider template ref points at.
func getTemplate(ctx context.Context, c client.Client, namespace string, ref *v1alpha1.ContractReference) (*unstructured.Unstructured, error) {
	gvk, err := GVK(ctx, c, ref)
	if err != nil {
		return nil, err
	}
	tmpl := &unstructured.Unstructured{}
	tmpl.SetGroupVersionKind(gvk)
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	if err := c.Get(ctx, key, tmpl); err != nil {
		return nil, Classify(err, gvk, key)
	}
	return tmpl, nil
}
