package ownerindex_test

import (
	"context"
	"os"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Run(m, func(e *testenv.Env) error { env = e; return nil }))
}

// Several controllers of one manager register the index; the lookups find
// a Machine by its controller's UID, and an orphan as an orphan.
func TestRegisterTwiceAndLookUp(t *testing.T) {
	var c client.Client
	env.StartManager(t, env.Scheme, func(mgr ctrl.Manager) error {
		c = mgr.GetClient()
		for range 2 { // as the MachineSet and the safety controller both do
			if err := ownerindex.Register(context.Background(), mgr, &v1alpha1.Machine{}); err != nil {
				return err
			}
		}
		return ownerindex.Register(context.Background(), mgr, &v1alpha1.Machine{}, &v1alpha1.MachineSet{})
	})
	prefix := "oi-" + rand.String(5) + "-"
	owned := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "owned", Namespace: "default", OwnerReferences: []metav1.OwnerReference{{
			APIVersion: v1alpha1.GroupVersion.String(), Kind: "MachineSet", Name: "set", UID: "set-uid", Controller: ptr.To(true),
		}}},
		Spec: v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "c"}},
	}
	orphan := &v1alpha1.Machine{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "orphan", Namespace: "default"},
		Spec:       v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "c"}},
	}
	for _, m := range []*v1alpha1.Machine{owned, orphan} {
		if err := env.Client.Create(t.Context(), m); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), m) })
	}
	names := func(by client.MatchingFields) (map[string]bool, error) {
		list := &v1alpha1.MachineList{}
		if err := c.List(t.Context(), list, client.InNamespace("default"), by); err != nil {
			return nil, err
		}
		out := map[string]bool{}
		for _, m := range list.Items {
			out[m.Name] = true
		}
		return out, nil
	}
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		byOwner, err := names(ownerindex.ControlledBy("set-uid"))
		if err != nil {
			return false, err
		}
		orphans, err := names(ownerindex.Orphans())
		if err != nil {
			return false, err
		}
		if byOwner[orphan.Name] || orphans[owned.Name] {
			t.Fatalf("wrong lookup: controlled by set-uid %v, orphans %v", byOwner, orphans)
		}
		return byOwner[owned.Name] && orphans[orphan.Name], nil
	})
	if err != nil {
		t.Fatalf("the lookups did not find the Machines: %v", err)
	}
}
