package controllertest

import (
	"context"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// ProviderGroup is the API group of the provider kinds tests register.
const ProviderGroup = "infrastructure.contract.test"

// RegisterProviderKind registers a namespaced kind of ProviderGroup
// (version v1alpha1, any fields, a status subresource) whose CRD carries
// the contract label with labelValue ("" for none), and waits until the
// API server serves it. Tests play the provider by writing its status.
func RegisterProviderKind(t *testing.T, kind, labelValue string) {
	t.Helper()
	plural := strings.ToLower(kind) + "s"
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: plural + "." + ProviderGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: ProviderGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: kind, ListKind: kind + "List", Plural: plural, Singular: strings.ToLower(kind)},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1alpha1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
	if labelValue != "" {
		crd.Labels = map[string]string{v1alpha1.ContractLabel: labelValue}
	}
	ctx := context.Background()
	if err := Env.Client.Create(ctx, crd); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		list := &unstructured.UnstructuredList{}
		list.SetAPIVersion(ProviderGroup + "/v1alpha1")
		list.SetKind(kind + "List")
		err := Env.Client.List(ctx, list, client.InNamespace(metav1.NamespaceDefault))
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("kind %s not served: %v", kind, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// ProviderObject is an empty object of a kind RegisterProviderKind made.
func ProviderObject(kind, namespace, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(ProviderGroup + "/v1alpha1")
	u.SetKind(kind)
	u.SetNamespace(namespace)
	u.SetName(name)
	return u
}

// GetProviderObject reads the object kind/name of the test's namespace.
func (h *Harness) GetProviderObject(kind, name string) (*unstructured.Unstructured, error) {
	u := ProviderObject(kind, h.NS, name)
	err := Env.Client.Get(context.Background(), client.ObjectKeyFromObject(u), u)
	return u, err
}
