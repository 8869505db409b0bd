package main

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// watchEvents hooks the fleet's bound check, the Node Ready flap count and
// the new Nodes' waits for Ready onto the observer's informers, so both see every event rather than
// samples: a surge slot used for a few milliseconds is still caught.
func (o *observer) watchEvents(ctx context.Context) error {
	mi, err := o.cache.GetInformer(ctx, &v1alpha1.Machine{})
	if err != nil {
		return err
	}
	if _, err := mi.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.machineEvent(obj, true) },
		UpdateFunc: func(_, obj any) { o.machineEvent(obj, true) },
		DeleteFunc: func(obj any) { o.machineEvent(obj, false) },
	}); err != nil {
		return err
	}
	ni, err := o.cache.GetInformer(ctx, &corev1.Node{})
	if err != nil {
		return err
	}
	_, err = ni.AddEventHandler(toolscache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initialList bool) {
			if n, ok := obj.(*corev1.Node); ok {
				o.readyWaits.observe(n, initialList)
			}
		},
		UpdateFunc: func(old, obj any) {
			before, ok1 := old.(*corev1.Node)
			after, ok2 := obj.(*corev1.Node)
			if !ok1 || !ok2 {
				return
			}
			if nodeReady(before) && !nodeReady(after) {
				o.nodeFlaps.Add(1)
			}
			o.readyWaits.observe(after, false)
		},
		DeleteFunc: func(obj any) {
			if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if n, ok := obj.(*corev1.Node); ok {
				o.readyWaits.forget(n)
			}
		},
	})
	return err
}

func (o *observer) machineEvent(obj any, exists bool) {
	if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	m, ok := obj.(*v1alpha1.Machine)
	if !ok || m.Namespace != benchNamespace {
		return // the floor's Machines are not the fleet
	}
	o.fleet.observe(m.UID, exists, m.DeletionTimestamp != nil)
	if o.timeline != nil {
		o.timeline.observe(m, exists)
	}
}

// nodeReady tells whether a Node's Ready condition is True.
func nodeReady(n *corev1.Node) bool {
	c := readyCondition(n)
	return c != nil && c.Status == corev1.ConditionTrue
}

// readyCondition is n's Ready condition, nil when it has none.
func readyCondition(n *corev1.Node) *corev1.NodeCondition {
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			return &n.Status.Conditions[i]
		}
	}
	return nil
}
