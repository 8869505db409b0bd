package ownerindex

import (
	"context"
	"fmt"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Views reads the index straight from the informers' stores: the objects
// it returns are the cache's own, where a List copies every object it
// returns into its slice. At 5000 Machines those copies were 60 % of the
// manager's allocations and a fifth of its live heap (docs/benchmarks.md,
// "Where we stand"). The objects are to be read, never changed: a change
// would corrupt the cache for every reader.
//
// A manager's cache hands each informer it makes to NewInformer (set it as
// cache.Options.NewInformer), which keeps the informer's store by object
// type. Without it (a nil Views, or a type whose informer it did not see)
// Controlled falls back to a List.
type Views struct {
	mu       sync.RWMutex
	indexers map[reflect.Type][]toolscache.Indexer
}

// NewInformer makes an informer as controller-runtime does by default and
// keeps its store.
func (v *Views) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	inf := toolscache.NewSharedIndexInformer(lw, obj, resync, indexers)
	v.mu.Lock()
	defer v.mu.Unlock()
	if v.indexers == nil {
		v.indexers = map[reflect.Type][]toolscache.Indexer{}
	}
	t := reflect.TypeOf(obj)
	v.indexers[t] = append(v.indexers[t], inf.GetIndexer())
	return inf
}

// indexer is the one store of objects of type t, or nil when there is
// none or more than one (a cache of several namespaces): a store of one
// namespace would miss the others' objects.
func (v *Views) indexer(t reflect.Type) toolscache.Indexer {
	if v == nil {
		return nil
	}
	v.mu.RLock()
	defer v.mu.RUnlock()
	if s := v.indexers[t]; len(s) == 1 {
		return s[0]
	}
	return nil
}

// fieldIndexName and namespacedKey are how controller-runtime names the
// index IndexField adds and keys its values; TestViewsMatchList fails if
// a new controller-runtime changes them.
func fieldIndexName(field string) string { return "field:" + field }

func namespacedKey(ns, value string) string { return ns + "/" + value }

// Controlled returns the objects of T in namespace ns whose controller has
// UID uid, or, with uid empty, those without a controller: the cache's own
// objects, to read only. list is the List type of T, used only when the
// fallback List runs.
func Controlled[T client.Object](ctx context.Context, v *Views, c client.Reader, list client.ObjectList, ns string, uid types.UID) ([]T, error) {
	value := string(uid)
	if uid == "" {
		value = orphanKey
	}
	return Indexed[T](ctx, v, c, list, ns, Name, value)
}

// Indexed returns the objects of T in namespace ns that the field index
// field (added with IndexField) has under value: the cache's own objects,
// to read only. list is the List type of T, used only when the fallback
// List runs.
func Indexed[T client.Object](ctx context.Context, v *Views, c client.Reader, list client.ObjectList, ns, field, value string) ([]T, error) {
	return read[T](ctx, v, c, list, fieldIndexName(field), namespacedKey(ns, value),
		client.InNamespace(ns), client.MatchingFields{field: value})
}

// InNamespace returns the objects of T in namespace ns: the cache's own
// objects, to read only. list is the List type of T, used only when the
// fallback List runs.
func InNamespace[T client.Object](ctx context.Context, v *Views, c client.Reader, list client.ObjectList, ns string) ([]T, error) {
	return read[T](ctx, v, c, list, toolscache.NamespaceIndex, ns, client.InNamespace(ns))
}

// Get returns the object of T in namespace ns named name: the cache's
// own object, to read only (without Views, a shallow copy of it); nil,
// with no error, when the cache has none. obj is an empty T, filled only
// when the fallback Get runs.
func Get[T client.Object](ctx context.Context, v *Views, c client.Reader, ns, name string, obj T) (T, error) {
	var zero T
	if idx := v.indexer(reflect.TypeOf(zero)); idx != nil {
		o, exists, err := idx.GetByKey(namespacedKey(ns, name))
		if err != nil || !exists {
			return zero, err
		}
		t, _ := o.(T)
		return t, nil
	}
	if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, obj, client.UnsafeDisableDeepCopy); err != nil {
		return zero, client.IgnoreNotFound(err)
	}
	return obj, nil
}

// All returns every object of T the cache holds, in every namespace it
// watches: the cache's own objects, to read only. list is the List type
// of T, used only when the fallback List runs.
func All[T client.Object](ctx context.Context, v *Views, c client.Reader, list client.ObjectList) ([]T, error) {
	var zero T
	if idx := v.indexer(reflect.TypeOf(zero)); idx != nil {
		return ofType[T](idx.List()), nil
	}
	return listCopies[T](ctx, c, list)
}

// read returns the objects the store of T has under key in its index,
// else those a List with opts returns.
func read[T client.Object](ctx context.Context, v *Views, c client.Reader, list client.ObjectList, index, key string, opts ...client.ListOption) ([]T, error) {
	var zero T
	if idx := v.indexer(reflect.TypeOf(zero)); idx != nil {
		objs, err := idx.ByIndex(index, key)
		if err != nil {
			return nil, fmt.Errorf("reading the %s index: %w", index, err)
		}
		return ofType[T](objs), nil
	}
	return listCopies[T](ctx, c, list, opts...)
}

// listCopies is the fallback without a store: a List with opts, its items
// shallow copies of the cache's objects.
func listCopies[T client.Object](ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) ([]T, error) {
	if err := c.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil {
		return nil, err
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, err
	}
	return ofType[T](items), nil
}

func ofType[T, O any](objs []O) []T {
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := any(o).(T); ok {
			out = append(out, t)
		}
	}
	return out
}
