package manager

import (
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

// shareMap shares a map's keys and values in place: assigning to a key
// that is there replaces the stored key too, so the decoded copy is freed.
func shareMap(m map[string]string) {
	for k, v := range m {
		m[share(k)] = share(v)
	}
}

func shareMeta(o metav1.Object) {
	shareMap(o.GetLabels())
	shareMap(o.GetAnnotations())
	fin := o.GetFinalizers()
	for i := range fin {
		fin[i] = share(fin[i])
	}
	refs := o.GetOwnerReferences()
	for i := range refs {
		r := &refs[i]
		r.APIVersion, r.Kind, r.Name, r.UID = share(r.APIVersion), share(r.Kind), share(r.Name), share(r.UID)
	}
}

func shareNode(n *corev1.Node) {
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		c.Type, c.Status = share(c.Type), share(c.Status)
		c.Reason, c.Message = share(c.Reason), share(c.Message)
	}
	for i := range n.Status.Addresses {
		a := &n.Status.Addresses[i]
		a.Type = share(a.Type)
	}
	info := &n.Status.NodeInfo
	for _, s := range []*string{&info.Architecture, &info.ContainerRuntimeVersion, &info.KernelVersion,
		&info.KubeProxyVersion, &info.KubeletVersion, &info.OperatingSystem, &info.OSImage} {
		*s = share(*s)
	}
}

func shareMachine(m *v1alpha1.Machine) {
	m.Spec.Class.Name = share(m.Spec.Class.Name)
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
