// Package patch is how every reconciler writes the object it reconciles:
// it snapshots the object when the reconcile reads it and, when asked,
// sends only what changed since, as two JSON merge patches — one of
// metadata and spec, one of the status subresource.
//
// A merge patch replaces a list whole, so it could undo what another
// writer did since the snapshot. These rules keep that from happening:
//
//   - A patch that changes metadata.finalizers or metadata.ownerReferences
//     carries the resourceVersion it was computed from: if the object
//     changed meanwhile, the API server answers Conflict and nothing is
//     written. Labels and annotations are maps, merged key by key, and
//     need no lock.
//   - PatchObjectLocked, for a decision made from a view of the object,
//     writes only if the object's generation (its spec) and each label
//     or annotation it changes are still as read, whatever happened to
//     its status.
//   - WithStatusLock makes every status patch carry the resourceVersion,
//     for objects whose status a stale cache could undo (a status computed
//     from an old read overwriting a newer one). A Conflict means the
//     reconcile starts over from a fresh read.
//   - WithOwnStatus, for a status only this controller writes, locks a
//     status patch on the object's uid and generation instead, when the
//     status read is the one this process last wrote (so the read is not
//     behind that write): a label or annotation written since does not
//     refuse it, a spec change does.
//   - WithOwnedConditions names the condition types the controller owns.
//     Without the status lock, a patch of the conditions reads the object
//     first and writes its conditions with only the owned types replaced,
//     against that read's resourceVersion, so another controller's
//     conditions survive (or the write is refused with a Conflict, never
//     silently lost).
//
// docs/architecture.md ("Writing objects") says why each rule is there.
package patch

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Helper writes one object's changes; make one per reconcile with New.
type Helper struct {
	c          client.Client
	reader     client.Reader
	base       client.Object
	lockStatus bool
	own        *OwnStatus
	owned      []string
	// statusBehind is the version read, once a metadata write returned a
	// status that is not the snapshot's: another writer changed the status
	// since the read, so the status computed from it is locked on the
	// version read, and refused (see wroteObject).
	statusBehind string
}

// Option configures a Helper.
type Option func(*Helper)

// WithStatusLock makes every status patch carry the object's
// resourceVersion (optimistic lock).
func WithStatusLock() Option { return func(h *Helper) { h.lockStatus = true } }

// WithOwnedConditions names the condition types (status.conditions[].type)
// the controller owns; the others are never written by an unlocked status
// patch.
func WithOwnedConditions(types ...string) Option {
	return func(h *Helper) { h.owned = append(h.owned, types...) }
}

// WithReader sets where an owned-conditions patch reads the object: the
// API server (a manager's APIReader) rather than a cache that may not have
// this reconcile's own earlier writes yet. Default: the client.
func WithReader(r client.Reader) Option {
	return func(h *Helper) {
		if r != nil {
			h.reader = r
		}
	}
}

// New snapshots obj, as the reconcile read it.
func New(c client.Client, obj client.Object, opts ...Option) *Helper {
	h := &Helper{c: c, reader: c, base: obj.DeepCopyObject().(client.Object)}
	for _, o := range opts {
		o(h)
	}
	return h
}

// Base is the snapshot the next patches are computed from. Writers that
// change the object on their own (package finalizer) take it as one of the
// copies they keep current, so the change is not sent again.
func (h *Helper) Base() client.Object { return h.base }

// Patch writes obj's changes since the snapshot: metadata and spec, then
// status; nothing when nothing changed. obj takes what the API server
// returned, keeping its unwritten status when only the first patch went
// through; the snapshot becomes what was written.
func (h *Helper) Patch(ctx context.Context, obj client.Object) error {
	if err := h.PatchObject(ctx, obj); err != nil {
		return err
	}
	return h.PatchStatus(ctx, obj)
}

// PatchObject writes obj's metadata and spec changes since the snapshot,
// now (a checkpoint: a later failure must not lose them). obj's status is
// left as it is; the snapshot's metadata and spec become obj's.
func (h *Helper) PatchObject(ctx context.Context, obj client.Object) error {
	if unchanged(h.base, obj, "ObjectMeta", "Spec") {
		return nil // the common case, without marshalling both objects
	}
	diff, err := h.diff(obj)
	if err != nil {
		return err
	}
	delete(diff, "status")
	if md, ok := diff["metadata"].(map[string]any); ok {
		// obj's resourceVersion differs from the snapshot's only when obj
		// was refreshed by another read: that is no change to send.
		delete(md, "resourceVersion")
		if len(md) == 0 {
			delete(diff, "metadata")
		}
		_, fin := md["finalizers"]
		_, own := md["ownerReferences"]
		if fin || own {
			md["resourceVersion"] = h.base.GetResourceVersion()
		}
	}
	if len(diff) == 0 {
		return nil
	}
	out := obj.DeepCopyObject().(client.Object)
	data, err := json.Marshal(diff)
	if err != nil {
		return err
	}
	if err := h.c.Patch(ctx, out, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	h.wroteObject(obj, out)
	return nil
}

// wroteObject takes out, what the API server returned for a write of
// obj's metadata and spec: out has the server's metadata and spec, and
// its status; obj keeps its unwritten status, the snapshot its own.
//
// A metadata write without a lock (labels, annotations, the spec) goes
// through whatever changed since the read, and returns the object as it
// is now: when its status is not the snapshot's, another writer changed
// the status since the read (a health check's condition). A status patch
// locked on the version returned would pass, and write back the conditions
// of the read over theirs; under WithStatusLock it stays locked on the
// version read instead, so it is refused and the reconcile decides again.
func (h *Helper) wroteObject(obj, out client.Object) {
	if h.lockStatus && h.statusBehind == "" && !unchanged(h.base, out, "Status") {
		h.statusBehind = h.base.GetResourceVersion()
	}
	base := out.DeepCopyObject().(client.Object)
	copyStatus(base, h.base)
	h.base = base
	copyStatus(out, obj)
	set(obj, out)
}

// PatchStatus writes obj's status changes since the snapshot, then makes
// the snapshot obj.
func (h *Helper) PatchStatus(ctx context.Context, obj client.Object) error {
	if unchanged(h.base, obj, "Status") {
		return nil
	}
	diff, err := h.diff(obj)
	if err != nil {
		return err
	}
	status, ok := diff["status"].(map[string]any)
	if !ok || len(status) == 0 {
		return nil
	}
	if h.own != nil && h.own.current(h.base) {
		out, err := h.patchOwnStatus(ctx, obj)
		if err != nil {
			return err
		}
		h.wroteStatus(obj, out)
		return nil
	}
	patch := map[string]any{"status": status}
	_, conds := status["conditions"]
	switch {
	case h.lockStatus && h.statusBehind != "":
		patch["metadata"] = map[string]any{"resourceVersion": h.statusBehind}
	case h.lockStatus || h.own != nil:
		patch["metadata"] = map[string]any{"resourceVersion": obj.GetResourceVersion()}
	case conds && len(h.owned) > 0:
		rv, merged, err := h.ownedConditions(ctx, obj)
		if err != nil {
			return err
		}
		status["conditions"] = merged
		patch["metadata"] = map[string]any{"resourceVersion": rv}
	}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	out := obj.DeepCopyObject().(client.Object)
	if err := h.c.Status().Patch(ctx, out, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	h.wroteStatus(obj, out)
	return nil
}

// wroteStatus takes out, what the API server returned for a status write
// of obj made on the snapshot: obj and the snapshot become it, and an
// OwnStatus remembers it.
func (h *Helper) wroteStatus(obj, out client.Object) {
	if h.own != nil {
		h.own.wrote(h.base.DeepCopyObject().(client.Object), out.DeepCopyObject().(client.Object))
	}
	h.base = out.DeepCopyObject().(client.Object)
	set(obj, out)
}

// diff is the merge patch from the snapshot to obj, as a map.
func (h *Helper) diff(obj client.Object) (map[string]any, error) {
	data, err := client.MergeFrom(h.base).Data(obj)
	if err != nil {
		return nil, fmt.Errorf("computing the patch of %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	var diff map[string]any
	if err := json.Unmarshal(data, &diff); err != nil {
		return nil, err
	}
	return diff, nil
}

// ownedConditions reads the object and returns its resourceVersion and its
// conditions with the owned types taken from obj.
func (h *Helper) ownedConditions(ctx context.Context, obj client.Object) (string, []any, error) {
	latest := obj.DeepCopyObject().(client.Object)
	if err := h.reader.Get(ctx, client.ObjectKeyFromObject(obj), latest); err != nil {
		return "", nil, err
	}
	have, err := conditions(latest)
	if err != nil {
		return "", nil, err
	}
	want, err := conditions(obj)
	if err != nil {
		return "", nil, err
	}
	owned := func(c any) bool {
		m, _ := c.(map[string]any)
		t, _ := m["type"].(string)
		return slices.Contains(h.owned, t)
	}
	merged := slices.DeleteFunc(have, owned)
	for _, c := range want {
		if owned(c) {
			merged = append(merged, c)
		}
	}
	if merged == nil {
		merged = []any{}
	}
	return latest.GetResourceVersion(), merged, nil
}

// conditions returns obj's status.conditions as JSON values.
func conditions(obj client.Object) ([]any, error) {
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	status, _ := u["status"].(map[string]any)
	list, _ := status["conditions"].([]any)
	return slices.Clone(list), nil
}

// unchanged reports whether the named fields of a and b are semantically
// equal; false when a kind lacks one of them (the diff then decides).
func unchanged(a, b client.Object, fields ...string) bool {
	va, vb := reflect.ValueOf(a).Elem(), reflect.ValueOf(b).Elem()
	if va.Type() != vb.Type() || va.Kind() != reflect.Struct {
		return false
	}
	for _, f := range fields {
		fa, fb := va.FieldByName(f), vb.FieldByName(f)
		if !fa.IsValid() || !equality.Semantic.DeepEqual(fa.Interface(), fb.Interface()) {
			return false
		}
	}
	return true
}

// copyStatus sets to's status to a deep copy of from's; kinds without a
// Status field are left alone.
func copyStatus(to, from client.Object) {
	f := reflect.ValueOf(from).Elem().FieldByName("Status")
	t := reflect.ValueOf(to).Elem().FieldByName("Status")
	if !f.IsValid() || !t.IsValid() {
		return
	}
	if dc := f.Addr().MethodByName("DeepCopy"); dc.IsValid() {
		t.Set(dc.Call(nil)[0].Elem())
		return
	}
	t.Set(f)
}

// set makes dst's object src's (a shallow copy: src is not used again).
func set(dst, src client.Object) {
	reflect.ValueOf(dst).Elem().Set(reflect.ValueOf(src).Elem())
}
