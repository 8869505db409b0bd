package patch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PatchObjectLocked is PatchObject for a decision that must not be written
// over a change it has not seen (a set's replicas decided from a view of
// the set, a rollback's template): it is written only if, on the API
// server,
//
//   - the object is still the one read (uid) and its generation is still
//     the snapshot's, that is, nobody changed its spec since; and
//   - each label and annotation it changes still has the snapshot's
//     value (a finalizer or owner-reference change carries the
//     resourceVersion, as everywhere in this package).
//
// A status write, or another writer's label or annotation, since the
// snapshot does not refuse it: the whole-object resourceVersion lock did,
// and a MachineSet's own status writes made a fifth of its deployment's
// writes to it fail. It is sent as a JSON patch (RFC 6902) whose "test"
// operations are those preconditions, applied by the API server in one
// step; a failed test is returned as a Conflict, so callers decide again
// from a fresh read as for a resourceVersion conflict. A kind without a
// generation (a Node) is locked field by field instead: each spec field
// it changes (a Node's taints) on its value read, so a kubelet's status
// writes do not refuse it either. docs/architecture.md ("Writing
// objects") says why.
func (h *Helper) PatchObjectLocked(ctx context.Context, obj client.Object) error {
	if unchanged(h.base, obj, "ObjectMeta", "Spec") {
		return nil
	}
	diff, err := h.diff(obj)
	if err != nil {
		return err
	}
	delete(diff, "status")
	if md, ok := diff["metadata"].(map[string]any); ok {
		delete(md, "resourceVersion") // a refreshed read, not a change (see PatchObject)
		if len(md) == 0 {
			delete(diff, "metadata")
		}
	}
	if len(diff) == 0 {
		return nil
	}
	ops, err := h.lockedOps(obj, diff)
	if err != nil {
		return err
	}
	data, err := json.Marshal(ops)
	if err != nil {
		return err
	}
	out := obj.DeepCopyObject().(client.Object)
	if err := h.c.Patch(ctx, out, client.RawPatch(types.JSONPatchType, data)); err != nil {
		if failedTest(err) {
			return apierrors.NewConflict(schema.GroupResource{}, obj.GetName(),
				fmt.Errorf("changed since it was read: %w", err))
		}
		return err
	}
	h.wroteObject(obj, out)
	return nil
}

// jsonOp is one RFC 6902 operation.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// lockedOps turns diff, the merge patch from the snapshot to obj, into
// PatchObjectLocked's operations: the preconditions first, then the
// changes.
func (h *Helper) lockedOps(obj client.Object, diff map[string]any) ([]any, error) {
	var base map[string]any
	data, err := json.Marshal(h.base)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, &base); err != nil {
		return nil, err
	}
	current, err := toMap(obj)
	if err != nil {
		return nil, err
	}
	ops := []any{test("/metadata/uid", string(h.base.GetUID()))}
	md, _ := diff["metadata"].(map[string]any)
	_, fin := md["finalizers"]
	_, own := md["ownerReferences"]
	generation := h.base.GetGeneration()
	switch {
	case fin || own:
		ops = append(ops, test("/metadata/resourceVersion", h.base.GetResourceVersion()))
	case generation > 0:
		ops = append(ops, test("/metadata/generation", generation))
	}
	var changes []any
	for _, k := range slices.Sorted(maps.Keys(diff)) {
		was, _ := base[k].(map[string]any)
		change, isMap := diff[k].(map[string]any)
		switch {
		case k == "metadata" || (generation == 0 && isMap && len(was) > 0):
			// Field by field, each on the value read.
			now, _ := current[k].(map[string]any)
			t, c := fieldOps("/"+pointerEscape(k), change, was, now)
			ops, changes = append(ops, t...), append(changes, c...)
			continue
		case generation == 0:
			t, c := memberOps("/"+pointerEscape(k), current[k], base[k])
			ops, changes = append(ops, t), append(changes, c...)
			continue
		}
		// Under the generation test the server has what the snapshot has:
		// each changed member of the spec is written whole, with its new
		// value (not its merge patch).
		now, _ := current[k].(map[string]any)
		if !isMap || len(was) == 0 || now == nil {
			changes = append(changes, replace("/"+pointerEscape(k), current[k], base[k])...)
			continue
		}
		for _, member := range slices.Sorted(maps.Keys(change)) {
			changes = append(changes, replace("/"+pointerEscape(k)+"/"+pointerEscape(member), now[member], was[member])...)
		}
	}
	return append(ops, changes...), nil
}

// fieldOps are the tests and changes of one object field (metadata, or
// the spec of a kind without a generation) at path p, from its merge
// patch, its value read and its new value: each changed member tested on
// its value read and written whole, a map with members read (labels,
// annotations) key by key.
func fieldOps(p string, diff, was, now map[string]any) (tests, changes []any) {
	for _, k := range slices.Sorted(maps.Keys(diff)) {
		kp := p + "/" + pointerEscape(k)
		change, isMap := diff[k].(map[string]any)
		oldMap, _ := was[k].(map[string]any)
		newMap, _ := now[k].(map[string]any)
		if isMap && len(oldMap) > 0 && newMap != nil {
			for _, key := range slices.Sorted(maps.Keys(change)) {
				t, c := memberOps(kp+"/"+pointerEscape(key), newMap[key], oldMap[key])
				tests, changes = append(tests, t), append(changes, c...)
			}
			continue
		}
		t, c := memberOps(kp, now[k], was[k])
		tests, changes = append(tests, t), append(changes, c...)
	}
	return tests, changes
}

// memberOps tests that the member at path p is still old (nil: absent)
// and sets it to v (nil: removes it).
func memberOps(p string, v, old any) (any, []any) {
	return test(p, old), replace(p, v, old)
}

// replace sets path to v, or removes it when v is nil and it was there.
func replace(path string, v, was any) []any {
	switch {
	case v != nil:
		return []any{add(path, v)}
	case was != nil:
		return []any{jsonOp{Op: "remove", Path: path}}
	}
	return nil
}

func toMap(obj client.Object) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	return m, json.Unmarshal(data, &m)
}

// test is a "test" operation; a nil value tests that the path is absent
// (or null), which RFC 6902 leaves to the implementation and the API
// server's json-patch accepts.
func test(path string, value any) map[string]any {
	return map[string]any{"op": "test", "path": path, "value": value}
}

// add sets path to value; a null inside value is dropped, as a merge patch
// would not write it either.
func add(path string, value any) jsonOp {
	return jsonOp{Op: "add", Path: path, Value: dropNulls(value)}
}

func dropNulls(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			if x != nil {
				out[k] = dropNulls(x)
			}
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = dropNulls(x)
		}
		return out
	}
	return v
}

// pointerEscape escapes a key for a JSON pointer (RFC 6901).
func pointerEscape(k string) string {
	return strings.ReplaceAll(strings.ReplaceAll(k, "~", "~0"), "/", "~1")
}

// failedTest reports whether the API server refused a JSON patch because
// it did not apply to the object as it is now: a "test" failed (or a path
// the snapshot has is gone, which only a change since can do). The API
// server answers that with a bare 422 Invalid — the json-patch message is
// not passed on — while a validation failure always names its fields
// (causes).
func failedTest(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	return s.Code == http.StatusUnprocessableEntity && s.Reason == metav1.StatusReasonInvalid &&
		(s.Details == nil || len(s.Details.Causes) == 0)
}
