package ownerindex_test

import (
	"context"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// Controlled reads the owner index straight from the informer's store
// when the cache's informers came through Views.NewInformer: the same
// Machines a List finds (controlled by a set, or orphans), and the cache's
// own objects rather than copies. With no Views it falls back to a List,
// with the same answer.
func TestViewsMatchList(t *testing.T) {
	ns := "default"
	views := &ownerindex.Views{}
	var c client.Client
	env.StartManagerWith(t, ctrl.Options{
		Scheme:  env.Scheme,
		Metrics: metricsserver.Options{BindAddress: "0"},
		Cache:   cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}, NewInformer: views.NewInformer},
	}, func(mgr ctrl.Manager) error {
		c = mgr.GetClient()
		return ownerindex.Register(t.Context(), mgr, &v1alpha1.Machine{})
	})

	prefix := "ov-" + rand.String(5) + "-"
	setUID := types.UID("set-" + rand.String(8))
	machine := func(name string, owner types.UID) *v1alpha1.Machine {
		m := &v1alpha1.Machine{
			ObjectMeta: metav1.ObjectMeta{Name: prefix + name, Namespace: ns},
			Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "c"}},
		}
		if owner != "" {
			m.OwnerReferences = []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet", Name: "set", UID: owner, Controller: ptr.To(true)}}
		}
		return m
	}
	for _, m := range []*v1alpha1.Machine{machine("a", setUID), machine("b", setUID), machine("other", "another-set"), machine("orphan", "")} {
		if err := env.Client.Create(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), m) })
	}
	// ours is the names, without the prefix, of the Machines this test made.
	ours := func(machines []*v1alpha1.Machine, err error) []string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range machines {
			if len(m.Name) > len(prefix) && m.Name[:len(prefix)] == prefix {
				out = append(out, m.Name[len(prefix):])
			}
		}
		slices.Sort(out)
		return out
	}
	names := func(v *ownerindex.Views, uid types.UID) []string {
		return ours(ownerindex.Controlled[*v1alpha1.Machine](t.Context(), v, c, &v1alpha1.MachineList{}, ns, uid))
	}
	testenv.Eventually(t, 30*time.Second, "the cache to hold the four Machines", func() (bool, error) {
		return slices.Equal(names(views, setUID), []string{"a", "b"}) && slices.Equal(names(views, ""), []string{"orphan"}), nil
	})
	for _, uid := range []types.UID{setUID, "another-set", "", "no-such-set"} {
		if view, list := names(views, uid), names(nil, uid); !slices.Equal(view, list) {
			t.Errorf("controlled by %q: the view reads %v, a List %v", uid, view, list)
		}
	}

	inNamespace := func(v *ownerindex.Views) []string {
		return ours(ownerindex.InNamespace[*v1alpha1.Machine](t.Context(), v, c, &v1alpha1.MachineList{}, ns))
	}
	if view, list := inNamespace(views), inNamespace(nil); !slices.Equal(view, []string{"a", "b", "orphan", "other"}) || !slices.Equal(view, list) {
		t.Errorf("in the namespace: the view reads %v, a List %v, want a, b, orphan and other", view, list)
	}

	// The cache's own object: two reads give the same pointer, where a
	// List gives a copy each time.
	read := func(v *ownerindex.Views) *v1alpha1.Machine {
		got, err := ownerindex.Controlled[*v1alpha1.Machine](t.Context(), v, c, &v1alpha1.MachineList{}, ns, "another-set")
		if err != nil || len(got) != 1 {
			t.Fatalf("controlled by another-set: %v, %v", got, err)
		}
		return got[0]
	}
	if first, second := read(views), read(views); first != second {
		t.Error("the view returned copies, not the cache's own objects")
	}
	if first, second := read(nil), read(nil); first == second {
		t.Error("the fallback List returned the same object twice: not a List")
	}

	// Get: the cache's own object by name, the same as the fallback's
	// read; nil for a name the cache does not have.
	get := func(v *ownerindex.Views, name string) *v1alpha1.Machine {
		m, err := ownerindex.Get(t.Context(), v, c, ns, name, &v1alpha1.Machine{})
		if err != nil {
			t.Fatalf("get %s: %v", name, err)
		}
		return m
	}
	if m := get(views, prefix+"other"); m != read(views) {
		t.Errorf("Get returned %p, not the cache's own object %p", m, read(views))
	}
	if view, fallback := get(views, prefix+"a"), get(nil, prefix+"a"); view == nil || fallback == nil || view.UID != fallback.UID || view == fallback {
		t.Errorf("Get of a: the view reads %v, the fallback %v", view, fallback)
	}
	for _, v := range []*ownerindex.Views{views, nil} {
		if m := get(v, prefix+"no-such-machine"); m != nil {
			t.Errorf("Get of a Machine the cache does not have returned %s", m.Name)
		}
	}
}
