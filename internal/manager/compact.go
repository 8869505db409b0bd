package manager

import (
	"slices"
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
func shareMap(m map[string]string) {
	for k, v := range m {
		m[share(k)] = share(v)
	}
}

func compactMeta(o metav1.Object) {
	shareMap(o.GetLabels())
	shareMap(o.GetAnnotations())
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
		a.Type = share(a.Type)
	}
	n.Status.NodeInfo.KubeletVersion = share(n.Status.NodeInfo.KubeletVersion)
}

func compactMachine(m *v1alpha1.Machine) {
	if m.Spec.Class != nil {
		m.Spec.Class.Name = share(m.Spec.Class.Name)
	}
	m.Status.Conditions, m.Status.Addresses = clip(m.Status.Conditions), clip(m.Status.Addresses)
	shareConditions(m.Status.Conditions)
	for i := range m.Status.Addresses {
		a := &m.Status.Addresses[i]
		a.Type = share(a.Type)
	}
	op := &m.Status.LastOperation
	op.Type, op.State = share(op.Type), share(op.State)
	m.Status.Phase = share(m.Status.Phase)
	m.Status.NodeVersion = share(m.Status.NodeVersion)
}

func shareConditions(cs []metav1.Condition) {
	for i := range cs {
		c := &cs[i]
		c.Type, c.Status = share(c.Type), share(c.Status)
		c.Reason, c.Message = share(c.Reason), share(c.Message)
	}
}
