package manager

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/types"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// BenchmarkCachedObjectHeap prints the heap one Node and one Machine hold
// in the manager's cache, decoded as the informers decode them (a Node
// from protobuf, a Machine from JSON), without the cache's transform and
// with it (cacheTransform). The samples (testdata/bench-*.json) are a Node
// and a Machine of the benchmark's N=5000 run (kwok and the sim); each of
// the n copies has its own name, UID, providerID, addresses and messages,
// as in a fleet. Twice the figure, a Machine and its Node, times the
// fleet is what the cache's objects alone hold (docs/benchmarks.md).
// go test -run '^$' -bench CachedObjectHeap ./internal/manager/
func BenchmarkCachedObjectHeap(b *testing.B) {
	const n = 5000
	scheme, err := newScheme()
	if err != nil {
		b.Fatal(err)
	}
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	for _, kind := range []struct {
		name string
		data [][]byte
	}{{"node", encodedNodes(b, protobuf.NewSerializer(scheme, scheme), n)}, {"machine", encodedMachines(b, n)}} {
		for _, transform := range []struct {
			name string
			fn   func(any) (any, error)
		}{{"decoded", func(o any) (any, error) { return o, nil }}, {"cached", cacheTransform}} {
			b.Run(kind.name+"/"+transform.name, func(b *testing.B) {
				var perObject float64
				for range b.N {
					objs := make([]any, n)
					before := heapInUse()
					for i, d := range kind.data {
						o, _, err := decoder.Decode(d, nil, nil)
						if err != nil {
							b.Fatal(err)
						}
						if objs[i], err = transform.fn(o); err != nil {
							b.Fatal(err)
						}
					}
					perObject = float64(heapInUse()-before) / n
					runtime.KeepAlive(objs)
				}
				b.ReportMetric(perObject, "heap-B/object")
			})
		}
	}
}

// encodedNodes is n copies of the sample Node in protobuf, each with its
// own name, UID, providerID and addresses.
func encodedNodes(tb testing.TB, encoder *protobuf.Serializer, n int) [][]byte {
	var node corev1.Node
	readSample(tb, "testdata/bench-node.json", &node)
	out := make([][]byte, n)
	for i := range out {
		x := node.DeepCopy()
		name, vm := fmt.Sprintf("bench-699fbc8c6-%05d", i), fmt.Sprintf("vm-%010x", i)
		x.Name, x.UID, x.ResourceVersion = name, uid(i), fmt.Sprint(100000+i)
		x.Labels[corev1.LabelHostname] = name
		x.Annotations[v1alpha1.NodeMachineAnnotation] = name
		x.Annotations["sim.millwright.dev/vm-id"] = vm
		x.Spec.ProviderID = "sim://local/local-b/" + vm
		x.Status.Addresses[0].Address = fmt.Sprintf("10.0.%d.%d", i/256, i%256)
		x.Status.Addresses[1].Address = name
		x.Status.NodeInfo.BootID, x.Status.NodeInfo.MachineID, x.Status.NodeInfo.SystemUUID = vm, vm, vm
		var buf bytes.Buffer
		if err := encoder.Encode(x, &buf); err != nil {
			tb.Fatal(err)
		}
		out[i] = buf.Bytes()
	}
	return out
}

// encodedMachines is n copies of the sample Machine in JSON, each with its
// own name, UID, providerID, Node, addresses and messages naming them.
func encodedMachines(tb testing.TB, n int) [][]byte {
	var m v1alpha1.Machine
	readSample(tb, "testdata/bench-machine.json", &m)
	out := make([][]byte, n)
	for i := range out {
		x := m.DeepCopy()
		name := fmt.Sprintf("bench-699fbc8c6-%05d", i)
		x.Name, x.UID, x.ResourceVersion = name, uid(i), fmt.Sprint(100000+i)
		x.Spec.ProviderID = fmt.Sprintf("sim://local/local-b/vm-%010x", i)
		x.Status.NodeRef.Name, x.Status.NodeName = name, name
		x.Status.Addresses[0].Address = fmt.Sprintf("10.0.%d.%d", i/256, i%256)
		x.Status.Addresses[1].Address = name
		x.Status.LastKnownState = fmt.Sprintf(`{"vm":"vm-%010x","providerID":%q,"state":"Created"}`, i, x.Spec.ProviderID)
		x.Status.LastOperation.Description = "Node " + name + " joined and is Ready"
		for j := range x.Status.Conditions {
			switch c := &x.Status.Conditions[j]; c.Type {
			case v1alpha1.InfrastructureReadyCondition:
				c.Message = "VM " + x.Spec.ProviderID + " exists"
			case v1alpha1.NodeReadyCondition, v1alpha1.ReadyCondition:
				c.Message = "Node " + name + " is Ready"
			}
		}
		var err error
		if out[i], err = json.Marshal(x); err != nil {
			tb.Fatal(err)
		}
	}
	return out
}

func readSample(tb testing.TB, path string, into any) {
	raw, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	if err := json.Unmarshal(raw, into); err != nil {
		tb.Fatalf("%s: %v", path, err)
	}
}

func uid(i int) types.UID { return types.UID(fmt.Sprintf("%08x-40e5-4f39-909d-4f5170fb88b0", i)) }

// heapInUse is the live heap after a collection.
func heapInUse() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}
