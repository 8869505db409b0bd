package contract

import (
	"context"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/machinefacts"
)

// Reasons of Problems; they become condition reasons and Event reasons.
// Those that make a Machine Pending are machinefacts' (its phase reads
// them).
const (
	ReasonKindUnknown       = machinefacts.ReasonContractKindUnknown
	ReasonContractMissing   = machinefacts.ReasonContractLabelMissing
	ReasonObjectNotFound    = machinefacts.ReasonContractObjectNotFound
	ReasonForbidden         = machinefacts.ReasonContractForbidden
	ReasonOwnedElsewhere    = machinefacts.ReasonContractOwnedElsewhere
	ReasonContractViolation = "ContractViolation"
)

// Problem is why a provider's object cannot be used: something a person
// must fix (install the provider, label its CRD, grant RBAC), reported as
// a condition and an Event rather than retried as an error.
type Problem struct {
	// Reason is one of the Reason constants.
	Reason string
	// Message says what is wrong and what to do.
	Message string
}

func (p *Problem) Error() string { return p.Reason + ": " + p.Message }

// GVK resolves the version of ref's kind to use: the last one the
// provider's CRD lists in its ContractLabel (docs/contract-providers.md,
// "Declaring the contract"). The CRD is named <plural>.<group>; the plural comes from
// discovery, which c's RESTMapper refreshes when a kind is new, so a
// provider installed while Millwright runs is found. The CRD is read as
// metadata only, through c (a cache when c is the manager's client).
func GVK(ctx context.Context, c client.Client, ref *v1alpha1.ContractReference) (schema.GroupVersionKind, error) {
	gk := schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind}
	mapping, err := c.RESTMapper().RESTMapping(gk)
	if meta.IsNoMatchError(err) {
		return schema.GroupVersionKind{}, &Problem{ReasonKindUnknown,
			fmt.Sprintf("the API server does not know kind %s: is its provider installed?", gk)}
	}
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	name := mapping.Resource.Resource + "." + ref.APIGroup
	if err := c.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return schema.GroupVersionKind{}, &Problem{ReasonContractMissing,
				fmt.Sprintf("kind %s has no CustomResourceDefinition %s: only CRD-defined providers can honour the contract", gk, name)}
		}
		return schema.GroupVersionKind{}, err
	}
	versions := crd.Labels[v1alpha1.ContractLabel]
	if versions == "" {
		return schema.GroupVersionKind{}, &Problem{ReasonContractMissing,
			fmt.Sprintf("CustomResourceDefinition %s has no label %s: its provider does not declare contract %s",
				name, v1alpha1.ContractLabel, v1alpha1.ContractVersion)}
	}
	all := strings.Split(versions, "_")
	return gk.WithVersion(all[len(all)-1]), nil
}

// Classify turns a read error of a provider object into a Problem when a
// person must act (missing, forbidden); other errors are returned as they are.
func Classify(err error, gvk schema.GroupVersionKind, key types.NamespacedName) error {
	switch {
	case apierrors.IsNotFound(err):
		return &Problem{ReasonObjectNotFound, fmt.Sprintf("%s %s not found in namespace %s", gvk.Kind, key.Name, key.Namespace)}
	case apierrors.IsForbidden(err):
		return &Problem{ReasonForbidden, fmt.Sprintf("the manager may not read %s: grant it get, list, watch, create, patch and delete on it (%v)", gvk.GroupKind(), err)}
	}
	return err
}
