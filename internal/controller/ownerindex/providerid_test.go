package ownerindex_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
	"github.com/millwright-dev/millwright/internal/testenv"
)

// The providerID index keeps buckets of providerIDs: a read through it
// finds the Machines and Nodes of one providerID, and not the others of
// its bucket, from a manager's cache.
func TestProviderIDReadsKeepOnlyTheirProviderID(t *testing.T) {
	var c client.Client
	env.StartManager(t, env.Scheme, func(mgr ctrl.Manager) error {
		c = mgr.GetClient()
		idx := mgr.GetFieldIndexer()
		if err := idx.IndexField(t.Context(), &v1alpha1.Machine{}, ownerindex.ProviderIDIndex, ownerindex.IndexProviderID); err != nil {
			return err
		}
		return idx.IndexField(t.Context(), &corev1.Node{}, ownerindex.ProviderIDIndex, ownerindex.IndexProviderID)
	})
	prefix := "pid-" + rand.String(5) + "-"
	id, neighbour, elsewhere := sameBucket(t, prefix)
	machine := func(name, providerID string) client.Object {
		return &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: prefix + name, Namespace: "default"},
			Spec: v1alpha1.MachineSpec{Class: &v1alpha1.MachineClassReference{Name: "c"}, ProviderID: providerID}}
	}
	node := func(name, providerID string) client.Object {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: prefix + name}, Spec: corev1.NodeSpec{ProviderID: providerID}}
	}
	for _, o := range []client.Object{machine("m", id), machine("neighbour", neighbour), machine("elsewhere", elsewhere),
		node("n", id), node("neighbour", neighbour)} {
		if err := env.Client.Create(t.Context(), o); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), o) })
	}
	machines := func(id string) []string {
		ms, err := ownerindex.MachinesWithProviderID(t.Context(), c, id, client.UnsafeDisableDeepCopy)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, m := range ms {
			out = append(out, m.Name[len(prefix):])
		}
		return out
	}
	nodes := func(id string) []string {
		ns, err := ownerindex.NodesWithProviderID(t.Context(), c, id)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, n := range ns {
			out = append(out, n.Name[len(prefix):])
		}
		return out
	}
	testenv.Eventually(t, 30*time.Second, "the cache to hold the Machines and Nodes", func() (bool, error) {
		return len(machines(elsewhere)) == 1 && len(nodes(neighbour)) == 1, nil
	})
	for _, tc := range []struct {
		got, want []string
		what      string
	}{
		{machines(id), []string{"m"}, "Machines of " + id},
		{machines(neighbour), []string{"neighbour"}, "Machines of " + neighbour},
		{machines(elsewhere), []string{"elsewhere"}, "Machines of " + elsewhere},
		{machines(prefix + "none"), nil, "Machines of an unknown providerID"},
		{nodes(id), []string{"n"}, "Nodes of " + id},
		{nodes(neighbour), []string{"neighbour"}, "Nodes of " + neighbour},
		{nodes(elsewhere), nil, "Nodes of " + elsewhere},
	} {
		if !slices.Equal(tc.got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.what, tc.got, tc.want)
		}
	}
}

// sameBucket returns two providerIDs the index puts in one bucket, and a
// third in another.
func sameBucket(t *testing.T, prefix string) (id, neighbour, elsewhere string) {
	t.Helper()
	bucket := func(id string) string {
		return ownerindex.IndexProviderID(&v1alpha1.Machine{Spec: v1alpha1.MachineSpec{ProviderID: id}})[0]
	}
	id = "sim:///" + prefix + "0"
	for i := 1; neighbour == "" || elsewhere == ""; i++ {
		candidate := fmt.Sprintf("sim:///%s%d", prefix, i)
		switch {
		case bucket(candidate) == bucket(id) && neighbour == "":
			neighbour = candidate
		case bucket(candidate) != bucket(id) && elsewhere == "":
			elsewhere = candidate
		}
	}
	return id, neighbour, elsewhere
}
