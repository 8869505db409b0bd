package machine

import (
	"context"
	"fmt"
	"strings"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Condition reasons about contract providers' objects.
const (
	ReasonKindUnknown       = "KindUnknown"
	ReasonContractMissing   = "ContractLabelMissing"
	ReasonObjectNotFound    = "ObjectNotFound"
	ReasonForbidden         = "Forbidden"
	ReasonOwnedElsewhere    = "OwnedByAnotherController"
	ReasonContractViolation = "ContractViolation"
	ReasonWaitingForInfra   = "WaitingForInfrastructure"
	ReasonWaitingForData    = "WaitingForBootstrapData"
)

// contractWatches holds what the machine controller needs to watch
// provider kinds it learns of while running: a watch is added the first
// time a Machine references a kind, so a provider installed after the
// manager started needs no restart.
type contractWatches struct {
	ctrl  controller.Controller
	cache cache.Cache

	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
}

// watch makes sure events of gvk's objects reach the Machine controlling them.
func (w *contractWatches) watch(gvk schema.GroupVersionKind, c client.Client) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.watched[gvk] || w.ctrl == nil {
		return nil
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	h := handler.EnqueueRequestForOwner(c.Scheme(), c.RESTMapper(), &v1alpha1.Machine{}, handler.OnlyControllerOwner())
	if err := w.ctrl.Watch(source.Kind[client.Object](w.cache, u, h)); err != nil {
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	if w.watched == nil {
		w.watched = map[schema.GroupVersionKind]bool{}
	}
	w.watched[gvk] = true
	return nil
}

// contractProblem is why a provider object cannot be used: it becomes a
// condition (reason, message) on the Machine, and an Event.
type contractProblem struct{ reason, message string }

func (p *contractProblem) Error() string { return p.reason + ": " + p.message }

// contractGVK resolves the version of ref's kind to use: the last one the
// provider's CRD lists in its ContractLabel (seed 004 "APIVersion field
// value"). The CRD is named <plural>.<group>; the plural comes from
// discovery, which the RESTMapper refreshes when a kind is new.
func (r *Reconciler) contractGVK(ctx context.Context, ref *v1alpha1.ContractReference) (schema.GroupVersionKind, error) {
	gk := schema.GroupKind{Group: ref.APIGroup, Kind: ref.Kind}
	mapping, err := r.Client.RESTMapper().RESTMapping(gk)
	if meta.IsNoMatchError(err) {
		return schema.GroupVersionKind{}, &contractProblem{ReasonKindUnknown,
			fmt.Sprintf("the API server does not know kind %s: is its provider installed?", gk)}
	}
	if err != nil {
		return schema.GroupVersionKind{}, err
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
	name := mapping.Resource.Resource + "." + ref.APIGroup
	if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, crd); err != nil {
		if apierrors.IsNotFound(err) {
			return schema.GroupVersionKind{}, &contractProblem{ReasonContractMissing,
				fmt.Sprintf("kind %s has no CustomResourceDefinition %s: only CRD-defined providers can honour the contract", gk, name)}
		}
		return schema.GroupVersionKind{}, err
	}
	versions := crd.Labels[v1alpha1.ContractLabel]
	if versions == "" {
		return schema.GroupVersionKind{}, &contractProblem{ReasonContractMissing,
			fmt.Sprintf("CustomResourceDefinition %s has no label %s: its provider does not declare contract %s",
				name, v1alpha1.ContractLabel, v1alpha1.ContractVersion)}
	}
	all := strings.Split(versions, "_")
	return gk.WithVersion(all[len(all)-1]), nil
}

// external reads the provider object ref points at, in the Machine's
// namespace, from the cache (watching its kind from now on) and makes the
// Machine its controller owner. A contractProblem error says why it cannot
// be used; other errors are transient.
func (r *Reconciler) external(ctx context.Context, s *scope, ref *v1alpha1.ContractReference) (*unstructured.Unstructured, error) {
	gvk, err := r.contractGVK(ctx, ref)
	if err != nil {
		return nil, err
	}
	if err := r.contract.watch(gvk, r.Client); err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	key := types.NamespacedName{Namespace: s.machine.Namespace, Name: ref.Name}
	switch err := r.contractReader().Get(ctx, key, obj); {
	case apierrors.IsNotFound(err):
		return nil, &contractProblem{ReasonObjectNotFound, fmt.Sprintf("%s %s not found in namespace %s", ref.Kind, ref.Name, key.Namespace)}
	case apierrors.IsForbidden(err):
		return nil, &contractProblem{ReasonForbidden, fmt.Sprintf("the manager may not read %s: grant it get, list, watch, patch and delete on %s (%v)", gvk.GroupKind(), gvk.GroupKind(), err)}
	case err != nil:
		return nil, err
	}
	return obj, r.adopt(ctx, s, obj)
}

// contractReader reads provider objects: from the cache, whose informers
// the watches share, once the controller runs; straight from the API
// server before (tests that drive a Reconciler by hand).
func (r *Reconciler) contractReader() client.Reader {
	if r.contract.cache != nil {
		return r.contract.cache
	}
	return r.Client
}

// adopt makes the Machine the controller owner of obj, taking over from
// the MachineSet that cloned it from a template. Any other controller
// owner is a conflict a person must resolve.
func (r *Reconciler) adopt(ctx context.Context, s *scope, obj *unstructured.Unstructured) error {
	refs := obj.GetOwnerReferences()
	kept := refs[:0:0]
	for _, ref := range refs {
		if ref.Controller == nil || !*ref.Controller {
			kept = append(kept, ref)
			continue
		}
		if ref.UID == s.machine.UID {
			return nil // already ours
		}
		if ref.Kind != "MachineSet" || ref.APIVersion != v1alpha1.GroupVersion.String() {
			return &contractProblem{ReasonOwnedElsewhere, fmt.Sprintf("%s %s is controlled by %s %s, not by this Machine",
				obj.GetKind(), obj.GetName(), ref.Kind, ref.Name)}
		}
	}
	before := obj.DeepCopy()
	kept = append(kept, *metav1.NewControllerRef(s.machine, v1alpha1.GroupVersion.WithKind("Machine")))
	obj.SetOwnerReferences(kept)
	if err := r.Client.Patch(ctx, obj, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("taking ownership of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	s.event("Normal", "Adopted", fmt.Sprintf("controls %s %s", obj.GetKind(), obj.GetName()))
	return nil
}

// contractFailure returns the terminal failure a provider object reports
// (status.failureReason / failureMessage), if any.
func contractFailure(obj *unstructured.Unstructured) (reason, message string, failed bool) {
	reason, _, _ = unstructured.NestedString(obj.Object, "status", "failureReason")
	message, _, _ = unstructured.NestedString(obj.Object, "status", "failureMessage")
	if reason == "" && message == "" {
		return "", "", false
	}
	if reason == "" {
		reason = "ProviderFailure"
	}
	return reason, message, true
}

// readyCondition returns obj's Ready condition (status.conditions), if any.
func readyCondition(obj *unstructured.Unstructured) (status, reason, message string, ok bool) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	for _, c := range conds {
		cm, _ := c.(map[string]any)
		if cm["type"] != "Ready" {
			continue
		}
		status, _ = cm["status"].(string)
		reason, _ = cm["reason"].(string)
		message, _ = cm["message"].(string)
		return status, reason, message, true
	}
	return "", "", "", false
}

// nestedFlag is a boolean at path in obj, false when absent.
func nestedFlag(obj *unstructured.Unstructured, path ...string) bool {
	v, _, _ := unstructured.NestedBool(obj.Object, path...)
	return v
}
