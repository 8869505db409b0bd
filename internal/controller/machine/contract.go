package machine

import (
	"context"
	"fmt"
	"sync"

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
	"github.com/millwright-dev/millwright/internal/contract"
	"github.com/millwright-dev/millwright/internal/patch"
)

// ReasonWaitingForInfra: the InfraMachine is not provisioned yet.
const ReasonWaitingForInfra = "WaitingForInfrastructure"

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

// external reads the provider object ref points at, in the Machine's
// namespace, from the cache (watching its kind from now on) and makes the
// Machine its controller owner. A contract.Problem error says why it
// cannot be used; other errors are transient.
func (r *Reconciler) external(ctx context.Context, s *scope, ref *v1alpha1.ContractReference) (*unstructured.Unstructured, error) {
	gvk, err := contract.GVK(ctx, r.Client, ref)
	if err != nil {
		return nil, err
	}
	if err := r.contract.watch(gvk, r.Client); err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	key := types.NamespacedName{Namespace: s.machine.Namespace, Name: ref.Name}
	if err := r.contractReader().Get(ctx, key, obj); err != nil {
		return nil, contract.Classify(err, gvk, key)
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
			return &contract.Problem{Reason: contract.ReasonOwnedElsewhere, Message: fmt.Sprintf("%s %s is controlled by %s %s, not by this Machine",
				obj.GetKind(), obj.GetName(), ref.Kind, ref.Name)}
		}
	}
	// Only on the version read (package patch locks an owner-reference
	// change): a merge patch replaces the list whole, and must not drop an
	// owner reference written since.
	h := patch.New(r.Client, obj)
	kept = append(kept, *metav1.NewControllerRef(s.machine, v1alpha1.GroupVersion.WithKind("Machine")))
	obj.SetOwnerReferences(kept)
	if err := h.PatchObject(ctx, obj); err != nil {
		return fmt.Errorf("taking ownership of %s %s: %w", obj.GetKind(), obj.GetName(), err)
	}
	s.event("Normal", "Adopted", fmt.Sprintf("controls %s %s", obj.GetKind(), obj.GetName()))
	return nil
}
