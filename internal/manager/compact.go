package manager

import (
	"maps"
	"slices"
	"strconv"
	"sync"
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// Decoding gives every object its own copy of every string, yet most
// strings of a cached Machine or Node are the same in thousands of them:
// label keys and values, annotation keys and values, the owner reference,
// finalizers, condition types, reasons and messages, the node info. The
// cache keeps one copy of each (unique.Make holds it while objects decoded
// since the last garbage collection use it; later objects share a new one),
// so the fleet's strings cost the manager's heap about once, not once per
// object (docs/benchmarks.md, "Where we stand").
func share[S ~string](s S) S {
	if s == "" {
		return s
	}
	return S(unique.Make(string(s)).Value())
}

// clip gives a decoded slice no more room than its length: decoders grow a
// slice by doubling, so a Machine's five conditions took the room of eight
// in every cached object (300 bytes a Machine or a Node).
func clip[E any](s []E) []E {
	if cap(s) == len(s) {
		return s
	}
	return slices.Clone(s)
}

// shareMap shares a map's keys and values in place: assigning to a key
// that is there replaces the stored key too, so the decoded copy is freed.
// A value that is the object's name (a Node's hostname label, the name of
// its Machine) becomes that string: sharing it would keep one more entry
// for it in unique's table, for one object.
func shareMap(m map[string]string, name string) {
	for k, v := range m {
		if v == name {
			m[share(k)] = name
		} else {
			m[share(k)] = share(v)
		}
	}
}

func compactMeta(o metav1.Object) {
	shareMap(o.GetLabels(), o.GetName())
	shareMap(o.GetAnnotations(), o.GetName())
	fin := clip(o.GetFinalizers())
	for i := range fin {
		fin[i] = share(fin[i])
	}
	o.SetFinalizers(fin)
	refs := clip(o.GetOwnerReferences())
	o.SetOwnerReferences(refs)
	for i := range refs {
		r := &refs[i]
		r.APIVersion, r.Kind, r.Name, r.UID = share(r.APIVersion), share(r.Kind), share(r.Name), share(r.UID)
	}
}

func compactNode(n *corev1.Node) {
	n.Status.Conditions, n.Status.Addresses = clip(n.Status.Conditions), clip(n.Status.Addresses)
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		c.Type, c.Status = share(c.Type), share(c.Status)
		c.Reason, c.Message = share(c.Reason), share(c.Message)
	}
	for i := range n.Status.Addresses {
		a := &n.Status.Addresses[i]
		a.Type, a.Address = share(a.Type), orName(a.Address, n.Name)
	}
	n.Status.NodeInfo.KubeletVersion = share(n.Status.NodeInfo.KubeletVersion)
}

func compactMachine(m *v1alpha1.Machine) {
	m.Labels, m.Annotations = sharedMaps.share(m.Labels), sharedMaps.share(m.Annotations)
	m.Status.NodeName = orName(m.Status.NodeName, m.Name) // a joined Machine's Node has its name
	if r := m.Status.NodeRef; r != nil {
		r.Name = orName(r.Name, m.Name)
	}
	if m.Spec.Class != nil {
		m.Spec.Class.Name = share(m.Spec.Class.Name)
	}
	m.Status.Conditions, m.Status.Addresses = clip(m.Status.Conditions), clip(m.Status.Addresses)
	shareConditions(m.Status.Conditions)
	for i := range m.Status.Addresses {
		a := &m.Status.Addresses[i]
		a.Type, a.Address = share(a.Type), orName(a.Address, m.Name)
	}
	op := &m.Status.LastOperation
	op.Type, op.State = share(op.Type), share(op.State)
	m.Status.Phase = share(m.Status.Phase)
	m.Status.NodeVersion = share(m.Status.NodeVersion)
}

// orName is s, or name when s is the same: an address or a label that
// repeats the object's name (its hostname) is then the name's string, not
// a copy of it.
func orName(s, name string) string {
	if s == name {
		return name
	}
	return s
}

func shareConditions(cs []metav1.Condition) {
	for i := range cs {
		c := &cs[i]
		c.Type, c.Status = share(c.Type), share(c.Status)
		c.Reason, c.Message = share(c.Reason), share(c.Message)
	}
}

// sharedMaps keeps one map for each set of labels, and of annotations,
// that cached Machines have alike. The Machines of one MachineSet carry
// the same ones (the set's and its template's labels, the template's hash
// and providerSpec), so a fleet's Machines hold a few maps, not two each:
// about 670 heap bytes a Machine (BenchmarkCachedObjectHeap). Nothing
// changes a cached object (its readers copy it, or only read it), so its
// maps may be shared as its strings are.
var sharedMaps = mapTable{byContent: map[string]map[string]string{}}

// sharedMapsMax bounds the table: when it is full it starts again empty
// (the cached objects keep their maps). A fleet has two maps for each
// MachineSet template it runs; Machines whose labels are each their own
// cost it at most this many maps.
const sharedMapsMax = 1024

// mapTable is a table of maps by their content.
type mapTable struct {
	mu        sync.Mutex
	byContent map[string]map[string]string
}

// share returns a map equal to m: the table's, else m (its strings shared
// by compactMeta), which the table keeps from then on.
func (t *mapTable) share(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	key := mapContent(m)
	t.mu.Lock()
	defer t.mu.Unlock()
	if shared, ok := t.byContent[key]; ok {
		return shared
	}
	if len(t.byContent) >= sharedMapsMax {
		clear(t.byContent)
	}
	t.byContent[key] = m
	return m
}

// mapContent is m's entries in key order, each string after its length:
// two maps have the same content only if they are equal.
func mapContent(m map[string]string) string {
	var b []byte
	for _, k := range slices.Sorted(maps.Keys(m)) {
		for _, s := range [2]string{k, m[k]} {
			b = strconv.AppendInt(b, int64(len(s)), 10)
			b = append(b, ':')
			b = append(b, s...)
		}
	}
	return string(b)
}
