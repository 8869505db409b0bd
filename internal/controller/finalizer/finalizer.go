// Package finalizer adds and removes a controller's finalizer on an object
// without ever dropping a finalizer another controller wrote.
//
// A JSON merge patch replaces a list whole, so a patch computed from a
// cached read of metadata.finalizers silently undoes any finalizer added
// since that read. Add and Remove send the list together with the
// resourceVersion it was read at: if the object changed since, the API
// server answers Conflict and nothing is written; the caller reads the
// object again and retries (a reconcile requeues).
package finalizer

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// Add writes name into obj's finalizers unless obj has it already, and
// reports whether it wrote. obj is the object as the caller read it: the
// write is made against its resourceVersion, and a Conflict
// (apierrors.IsConflict) means obj is stale. On success obj, and every one
// of copies (other copies of the object the caller holds, such as the one
// it computes its later patches from), get the written finalizers and the
// new resourceVersion; nothing else of them changes, so changes the caller
// has not written yet stay.
func Add(ctx context.Context, c client.Writer, name string, obj client.Object, copies ...client.Object) (bool, error) {
	if controllerutil.ContainsFinalizer(obj, name) {
		return false, nil
	}
	return true, write(ctx, c, append(slices.Clone(obj.GetFinalizers()), name), obj, copies)
}

// Remove deletes name from obj's finalizers if obj has it, and reports
// whether it wrote, as Add does.
func Remove(ctx context.Context, c client.Writer, name string, obj client.Object, copies ...client.Object) (bool, error) {
	if !controllerutil.ContainsFinalizer(obj, name) {
		return false, nil
	}
	keep := slices.DeleteFunc(slices.Clone(obj.GetFinalizers()), func(f string) bool { return f == name })
	return true, write(ctx, c, keep, obj, copies)
}

// write sends finalizers, and only them, on the condition that obj's
// resourceVersion is still the current one.
func write(ctx context.Context, c client.Writer, finalizers []string, obj client.Object, copies []client.Object) error {
	if obj.GetResourceVersion() == "" {
		return fmt.Errorf("writing finalizers of %s: the object has no resourceVersion to write against", client.ObjectKeyFromObject(obj))
	}
	type meta struct {
		ResourceVersion string   `json:"resourceVersion"`
		Finalizers      []string `json:"finalizers"`
	}
	data, err := json.Marshal(struct {
		Metadata meta `json:"metadata"`
	}{meta{obj.GetResourceVersion(), finalizers}})
	if err != nil {
		return err
	}
	out := obj.DeepCopyObject().(client.Object)
	if err := c.Patch(ctx, out, client.RawPatch(types.MergePatchType, data)); err != nil {
		return err
	}
	for _, o := range append([]client.Object{obj}, copies...) {
		o.SetFinalizers(slices.Clone(out.GetFinalizers()))
		o.SetResourceVersion(out.GetResourceVersion())
	}
	return nil
}
