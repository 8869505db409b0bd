package machine

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/contract"
)

// contractInfra is a Machine's infrastructure made by a contract provider:
// the provider's controller reconciles the InfraMachine spec.infrastructureRef
// points at; Millwright owns it, waits for it to report provisioned and
// copies what the contract says onto the Machine (docs/contract-providers.md).
type contractInfra struct {
	r *Reconciler
}

func (c *contractInfra) ensure(ctx context.Context, s *scope) (reconcile.Result, error) {
	ref := s.machine.Spec.InfrastructureRef
	obj, err := c.r.external(ctx, s, ref)
	if err != nil {
		return reconcile.Result{}, c.r.contractError(s, v1alpha1.InfrastructureReadyCondition, err)
	}
	if reason, message, failed := contract.Failure(obj); failed {
		s.fail(reason, fmt.Sprintf("%s %s: %s", ref.Kind, ref.Name, message))
		return reconcile.Result{}, nil
	}
	if !contract.InfrastructureProvisioned(obj) {
		reason, message := ReasonWaitingForInfra, fmt.Sprintf("waiting for %s %s to be provisioned", ref.Kind, ref.Name)
		if c, ok := contract.ReadyCondition(obj); ok && c.Status != string(metav1.ConditionTrue) && c.Reason != "" {
			reason, message = c.Reason, fmt.Sprintf("%s %s: %s", ref.Kind, ref.Name, c.Message)
		}
		s.setCondition(v1alpha1.InfrastructureReadyCondition, metav1.ConditionFalse, reason, message)
		return reconcile.Result{}, nil // its watch wakes us
	}
	providerID := contract.String(obj, "spec", "providerID")
	if providerID == "" {
		return reconcile.Result{}, c.r.contractError(s, v1alpha1.InfrastructureReadyCondition, &contract.Problem{Reason: contract.ReasonContractViolation,
			Message: fmt.Sprintf("%s %s reports provisioned but has no spec.providerID", ref.Kind, ref.Name)})
	}
	if err := c.record(ctx, s, obj, providerID); err != nil {
		return reconcile.Result{}, err
	}
	reason, message := ReasonProvisioned, fmt.Sprintf("%s %s is provisioned", ref.Kind, ref.Name)
	if c, ok := contract.ReadyCondition(obj); ok && c.Reason != "" {
		// Mirrored, but provisioned stays provisioned: the contract says a
		// provider's Ready may later say more about its operational state.
		reason, message = c.Reason, fmt.Sprintf("%s %s: Ready=%s %s", ref.Kind, ref.Name, c.Status, c.Message)
	}
	s.setCondition(v1alpha1.InfrastructureReadyCondition, metav1.ConditionTrue, reason, message)
	return reconcile.Result{}, nil
}

// record copies providerID, failure domain and addresses onto the Machine.
// A providerID, once recorded, never changes: a provider reporting another
// breaks the contract, and the Machine keeps the first.
func (c *contractInfra) record(ctx context.Context, s *scope, obj *unstructured.Unstructured, providerID string) error {
	m := s.machine
	switch m.Spec.ProviderID {
	case providerID:
	case "":
		m.Spec.ProviderID = providerID
		s.event(corev1.EventTypeNormal, "Provisioned", "infrastructure provisioned: "+providerID)
	default:
		return c.r.contractError(s, v1alpha1.InfrastructureReadyCondition, &contract.Problem{Reason: contract.ReasonContractViolation,
			Message: fmt.Sprintf("%s %s changed its providerID from %s to %s", obj.GetKind(), obj.GetName(), m.Spec.ProviderID, providerID)})
	}
	if fd := contract.String(obj, "spec", "failureDomain"); fd != "" && m.Spec.FailureDomain == "" {
		m.Spec.FailureDomain = fd // the contract's deprecated reverse direction
	}
	if err := s.patchObject(ctx); err != nil {
		return err
	}
	addrs, _, _ := unstructured.NestedSlice(obj.Object, "status", "addresses")
	m.Status.Addresses = m.Status.Addresses[:0]
	for _, a := range addrs {
		am, _ := a.(map[string]any)
		t, _ := am["type"].(string)
		addr, _ := am["address"].(string)
		if t != "" && addr != "" {
			m.Status.Addresses = append(m.Status.Addresses, v1alpha1.MachineAddress{Type: v1alpha1.MachineAddressType(t), Address: addr})
		}
	}
	return nil
}

// update has nothing to do: a contract provider reconciles changes to its
// own objects; a changed template rolls the Machines.
func (c *contractInfra) update(context.Context, *scope) (reconcile.Result, error) {
	return reconcile.Result{}, nil
}

// delete deletes the InfraMachine and waits until it is gone: its provider
// removes its finalizer once the VM is gone.
func (c *contractInfra) delete(ctx context.Context, s *scope) (bool, reconcile.Result, error) {
	return c.r.deleteExternal(ctx, s, s.machine.Spec.InfrastructureRef)
}

// volumeIDs: a contract provider does not map volumes; the drain then
// waits for every volume attachment of the Node (none are skipped).
func (c *contractInfra) volumeIDs(context.Context, []*corev1.PersistentVolumeSpec) ([]string, error) {
	return nil, nil
}

// deleteExternal deletes the object ref points at and reports done once it
// no longer exists. A kind the API server no longer knows, or an object
// already gone, is done.
func (r *Reconciler) deleteExternal(ctx context.Context, s *scope, ref *v1alpha1.ContractReference) (bool, reconcile.Result, error) {
	if ref == nil {
		return true, reconcile.Result{}, nil
	}
	gvk, err := contract.GVK(ctx, r.Client, ref)
	var problem *contract.Problem
	if errors.As(err, &problem) {
		return true, reconcile.Result{}, nil
	}
	if err != nil {
		return false, reconcile.Result{}, err
	}
	if err := r.contract.watch(gvk, r.Client); err != nil {
		return false, reconcile.Result{}, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	if err := r.contractReader().Get(ctx, client.ObjectKey{Namespace: s.machine.Namespace, Name: ref.Name}, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return true, reconcile.Result{}, nil
		}
		return false, reconcile.Result{}, err
	}
	if obj.GetDeletionTimestamp().IsZero() {
		if err := r.Client.Delete(ctx, obj); client.IgnoreNotFound(err) != nil {
			return false, reconcile.Result{}, fmt.Errorf("deleting %s %s: %w", ref.Kind, ref.Name, err)
		}
		s.event(corev1.EventTypeNormal, "Deleting", fmt.Sprintf("deleting %s %s", ref.Kind, ref.Name))
	}
	// The delete event of the watched object wakes us; the requeue is a
	// safety net for a provider that never finishes.
	return false, reconcile.Result{RequeueAfter: r.Config.LongBackoffBase}, nil
}

// contractError turns a contract.Problem into a False condition of condType
// and an Event (returning nil: the watches and the creation timeout take
// it from there); other errors are returned to be retried.
func (r *Reconciler) contractError(s *scope, condType string, err error) error {
	var problem *contract.Problem
	if !errors.As(err, &problem) {
		return err
	}
	r.missing(s, condType, problem.Reason, problem.Message)
	return nil
}
