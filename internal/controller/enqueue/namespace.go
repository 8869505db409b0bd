// Package enqueue has the map functions controllers share to turn a watched
// object into reconcile requests.
package enqueue

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// AllInNamespace maps an object to every object of newList's kind in its
// namespace, read from c (a cache). With exceptSelf, an object of that
// kind does not map to itself (its own controller has it already).
func AllInNamespace(c client.Reader, newList func() client.ObjectList, exceptSelf bool) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		list := newList()
		if err := c.List(ctx, list, client.InNamespace(o.GetNamespace()), client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		var reqs []reconcile.Request
		_ = meta.EachListItem(list, func(item runtime.Object) error {
			obj, ok := item.(client.Object)
			if ok && !(exceptSelf && obj.GetName() == o.GetName()) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(obj)})
			}
			return nil
		})
		return reqs
	}
}
