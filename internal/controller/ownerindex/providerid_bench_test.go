package ownerindex_test

import (
	"fmt"
	"runtime"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"

	"github.com/millwright-dev/millwright/api/v1alpha1"
	"github.com/millwright-dev/millwright/internal/controller/ownerindex"
)

// BenchmarkProviderIDIndexHeap prints the heap a store of 5000 Machines
// holds per Machine (the objects aside): without a providerID index, with
// one index value per providerID (as before buckets), and with
// ProviderIDIndex's buckets. The
// index values are made as controller-runtime's IndexField makes them
// for a namespaced object (its namespace's and every namespace's).
// go test -run '^$' -bench ProviderIDIndexHeap ./internal/controller/ownerindex/
func BenchmarkProviderIDIndexHeap(b *testing.B) {
	const n = 5000
	machines := make([]*v1alpha1.Machine, n)
	for i := range machines {
		machines[i] = &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: fmt.Sprintf("web-%d", i)},
			Spec: v1alpha1.MachineSpec{ProviderID: fmt.Sprintf("aws:///eu-west-1a/i-%017x", i)}}
	}
	for _, tc := range []struct {
		name   string
		values func(*v1alpha1.Machine) []string
	}{
		{"no-index", func(*v1alpha1.Machine) []string { return nil }},
		{"one-value-per-providerID", func(m *v1alpha1.Machine) []string { return []string{m.Spec.ProviderID} }},
		{"buckets", func(m *v1alpha1.Machine) []string { return ownerindex.IndexProviderID(m) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			index := func(obj any) ([]string, error) {
				m := obj.(*v1alpha1.Machine)
				var out []string
				for _, v := range tc.values(m) {
					out = append(out, m.Namespace+"/"+v, "__all_namespaces/"+v)
				}
				return out, nil
			}
			var perMachine float64
			for range b.N {
				before := heapInUse()
				store := toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{"providerID": index})
				for _, m := range machines {
					if err := store.Add(m); err != nil {
						b.Fatal(err)
					}
				}
				bare := heapInUse()
				for _, m := range machines {
					if err := store.Delete(m); err != nil {
						b.Fatal(err)
					}
				}
				runtime.KeepAlive(store)
				perMachine = float64(bare-before) / n
			}
			b.ReportMetric(perMachine, "heap-B/machine")
		})
	}
}

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
