package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OwnStatus remembers, per object, the status this process last wrote and
// the resourceVersion that write was made on. It is for a status only one
// controller writes (a MachineSet's, a MachineDeployment's): when the
// status read is the one last written, the read is not behind that write,
// and a status computed from it may be written on the object's uid and
// generation alone (WithOwnStatus) — a label, annotation or any other
// write that is not the spec since the read does not refuse it, as the
// resourceVersion lock did. docs/architecture.md ("Writing objects") says
// why. Memory only: after a restart the first write of each object is
// locked on its resourceVersion, and remembered from then on.
type OwnStatus struct {
	mu sync.Mutex
	m  map[types.NamespacedName]ownWrite
}

// ownWrite is one object's last status write.
type ownWrite struct {
	uid    types.UID
	from   string        // the resourceVersion the write was made on
	before client.Object // the object it was made on (its status replaced)
	obj    client.Object // as the API server returned it
	at     time.Time
}

// behindFor bounds how long a read whose status is the one our last write
// replaced is taken for a cache behind that write. A watch event comes in
// well under a second; past this, the read may be a status someone else
// wrote (equal to ours before by chance): a write locked on its
// resourceVersion settles it, instead of waiting for ever.
const behindFor = 10 * time.Second

// WithOwnStatus makes status patches lock on the object's uid and
// generation when the status read is the one this process last wrote
// (own), and on its resourceVersion otherwise (as WithStatusLock): a read
// from a cache behind that write, or a status someone else wrote.
func WithOwnStatus(own *OwnStatus) Option { return func(h *Helper) { h.own = own } }

// Behind reports whether obj, as read, is from before this process's last
// status write of it: the very version that write was made on, or
// (shortly after the write) one with the status it replaced, as a write of
// another field in between leaves it. It comes from a cache that has not
// seen the write yet, from which a status write would be refused (or,
// were it not locked, would undo it): wait for the write's watch event
// instead.
func (o *OwnStatus) Behind(obj client.Object) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.m[client.ObjectKeyFromObject(obj)]
	if !ok || w.uid != obj.GetUID() {
		return false
	}
	return w.from == obj.GetResourceVersion() ||
		(time.Since(w.at) < behindFor && unchanged(w.before, obj, "Status") && !unchanged(w.obj, obj, "Status"))
}

// Forget drops what is remembered of the object at key (it is gone).
func (o *OwnStatus) Forget(key types.NamespacedName) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.m, key)
}

// current reports whether obj's status is the one this process last wrote.
func (o *OwnStatus) current(obj client.Object) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	w, ok := o.m[client.ObjectKeyFromObject(obj)]
	return ok && w.uid == obj.GetUID() && unchanged(w.obj, obj, "Status")
}

// wrote records a status write made on before; out is what the API
// server returned. Neither is changed afterwards.
func (o *OwnStatus) wrote(before, out client.Object) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[types.NamespacedName]ownWrite{}
	}
	o.m[client.ObjectKeyFromObject(out)] = ownWrite{uid: out.GetUID(), from: before.GetResourceVersion(),
		before: before, obj: out, at: time.Now()}
}

// patchOwnStatus writes obj's status changes since the snapshot, whose
// status is the one this process last wrote, as a JSON patch that tests
// the snapshot's uid and generation first: the status was computed for
// that spec, and nobody else writes it. Each changed member of the status
// is written whole. A failed test is returned as a Conflict.
func (h *Helper) patchOwnStatus(ctx context.Context, obj client.Object) (client.Object, error) {
	base, err := toMap(h.base)
	if err != nil {
		return nil, err
	}
	current, err := toMap(obj)
	if err != nil {
		return nil, err
	}
	ops := []any{test("/metadata/uid", string(h.base.GetUID()))}
	if g := h.base.GetGeneration(); g > 0 {
		ops = append(ops, test("/metadata/generation", g))
	}
	was, _ := base["status"].(map[string]any)
	now, _ := current["status"].(map[string]any)
	if len(was) == 0 {
		// The server may have no status at all: no member to add to.
		ops = append(ops, add("/status", now))
	} else {
		union := maps.Clone(was)
		maps.Copy(union, now)
		for _, k := range slices.Sorted(maps.Keys(union)) {
			if !reflect.DeepEqual(was[k], now[k]) {
				ops = append(ops, replace("/status/"+pointerEscape(k), now[k], was[k])...)
			}
		}
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return nil, err
	}
	out := obj.DeepCopyObject().(client.Object)
	if err := h.c.Status().Patch(ctx, out, client.RawPatch(types.JSONPatchType, data)); err != nil {
		if failedTest(err) {
			return nil, apierrors.NewConflict(schema.GroupResource{}, obj.GetName(),
				fmt.Errorf("its spec changed since it was read: %w", err))
		}
		return nil, err
	}
	return out, nil
}
