package safety

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/controller/requeue"
)

// staleNodes annotates Nodes no Machine owns with NodeNotManagedAnnotation
// and reports them (an Event on the Node, the millwright_unmanaged_nodes
// gauge). It never deletes one: a Node Millwright did not make may be a
// control-plane host or another tool's, and even a leftover of ours may
// carry workloads. The annotation is removed when a Machine claims the Node.
type staleNodes struct {
	// machines reads Machines (control cache; the machine controller's
	// providerID index).
	machines client.Client
	// nodes reads and patches Nodes (target cluster).
	nodes    client.Client
	recorder events.EventRecorder
	cfg      Config
	now      func() time.Time

	mu        sync.Mutex
	unmanaged map[string]bool // Node names carrying the annotation, for the gauge
}

func (s *staleNodes) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := s.nodes.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			s.track(req.Name, false)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	owned, ours, err := s.owned(ctx, node)
	if err != nil || !ours {
		return reconcile.Result{}, err
	}
	_, annotated := node.Annotations[v1alpha1.NodeNotManagedAnnotation]
	if owned {
		s.track(node.Name, false)
		if annotated {
			return reconcile.Result{}, s.annotate(ctx, node, false)
		}
		return reconcile.Result{}, nil
	}
	if wait := node.CreationTimestamp.Add(s.cfg.StaleNodeAfter).Sub(s.now()); wait > 0 {
		// Young: its Machine may not have recorded the VM yet.
		return requeue.Deadline(wait), nil
	}
	s.track(node.Name, true)
	if annotated {
		return reconcile.Result{}, nil
	}
	if err := s.annotate(ctx, node, true); err != nil {
		return reconcile.Result{}, err
	}
	log.FromContext(ctx).Info("Node not managed by any Machine: annotated, not deleted", "node", node.Name, "providerID", node.Spec.ProviderID)
	if s.recorder != nil {
		s.recorder.Eventf(node, nil, corev1.EventTypeWarning, "NodeNotManaged", "StaleNodeCheck",
			"no Machine owns this Node (providerID %q): annotated %s; Millwright will not delete it", node.Spec.ProviderID, v1alpha1.NodeNotManagedAnnotation)
	}
	return reconcile.Result{}, nil
}

// owned reports whether a Machine owns node: the one its back-reference
// annotations name, or one with its providerID. ours is false for a Node
// whose annotations name another namespace while the manager watches only
// one: its Machine is invisible here, so it is not judged.
func (s *staleNodes) owned(ctx context.Context, node *corev1.Node) (owned, ours bool, err error) {
	if name, ns := node.Annotations[v1alpha1.NodeMachineAnnotation], node.Annotations[v1alpha1.NodeClusterNamespaceAnnotation]; name != "" && ns != "" {
		if s.cfg.Namespace != "" && ns != s.cfg.Namespace {
			return false, false, nil
		}
		err := s.machines.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &v1alpha1.Machine{})
		if err == nil {
			return true, true, nil
		}
		if !apierrors.IsNotFound(err) {
			return false, true, err
		}
	}
	if node.Spec.ProviderID == "" {
		return false, true, nil
	}
	machines, err := ownerindex.MachinesWithProviderID(ctx, s.machines, node.Spec.ProviderID, client.UnsafeDisableDeepCopy)
	if err != nil {
		return false, true, err
	}
	return len(machines) > 0, true, nil
}

// annotate adds (on) or removes the not-managed annotation.
func (s *staleNodes) annotate(ctx context.Context, node *corev1.Node, on bool) error {
	patch := client.MergeFrom(node.DeepCopy())
	if on {
		if node.Annotations == nil {
			node.Annotations = map[string]string{}
		}
		node.Annotations[v1alpha1.NodeNotManagedAnnotation] = "true"
	} else {
		delete(node.Annotations, v1alpha1.NodeNotManagedAnnotation)
	}
	return client.IgnoreNotFound(s.nodes.Patch(ctx, node, patch))
}

// track keeps the set of unmanaged Nodes, and the gauge, up to date.
func (s *staleNodes) track(name string, unmanaged bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.unmanaged == nil {
		s.unmanaged = map[string]bool{}
	}
	if unmanaged {
		s.unmanaged[name] = true
	} else {
		delete(s.unmanaged, name)
	}
	unmanagedNodes.Set(float64(len(s.unmanaged)))
}
