package manager

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// The cache keeps of a Node what the controllers read — metadata but its
// managedFields, spec, conditions, addresses, the kubelet version (what
// an in-place update waits for) — and nothing else of its status.
func TestCacheTransformTrimsNodes(t *testing.T) {
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{"a": "b"},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}},
		Spec: corev1.NodeSpec{ProviderID: "sim://x", Unschedulable: true},
		Status: corev1.NodeStatus{
			Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "10.0.0.1"}},
			Images:          []corev1.ContainerImage{{Names: []string{"registry/image:1"}, SizeBytes: 1}},
			VolumesAttached: []corev1.AttachedVolume{{Name: "v"}},
			NodeInfo:        corev1.NodeSystemInfo{KubeletVersion: "v1.34.0", BootID: "b", MachineID: "m", OSImage: "o"},
		},
	}
	out, err := cacheTransform(node)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Node)
	if len(got.ManagedFields) != 0 || len(got.Status.Images) != 0 || len(got.Status.VolumesAttached) != 0 ||
		got.Status.NodeInfo != (corev1.NodeSystemInfo{KubeletVersion: "v1.34.0"}) {
		t.Errorf("kept what no controller reads: managedFields %v, images %v, volumesAttached %v, nodeInfo %+v",
			got.ManagedFields, got.Status.Images, got.Status.VolumesAttached, got.Status.NodeInfo)
	}
	if got.Labels["a"] != "b" || got.Spec.ProviderID != "sim://x" || !got.Spec.Unschedulable ||
		len(got.Status.Conditions) != 1 || len(got.Status.Addresses) != 1 || got.Status.NodeInfo.KubeletVersion != "v1.34.0" {
		t.Errorf("lost what the controllers read: %+v", got)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "x"}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	out, err = cacheTransform(pod)
	if err != nil {
		t.Fatal(err)
	}
	if p := out.(*corev1.Pod); len(p.ManagedFields) != 0 || p.Status.Phase != corev1.PodRunning {
		t.Errorf("another kind: %+v", p)
	}
}

// Two objects decoded apart share their repeated strings once cached: a
// label's key and value, an annotation, the owner reference, a condition's
// reason and message, the node info.
func TestCacheTransformSharesStrings(t *testing.T) {
	nodeJSON := `{"metadata":{"name":"n","labels":{"topology.kubernetes.io/zone":"local-b"},
		"annotations":{"kwok.x-k8s.io/node":"fake"}},
		"status":{"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","message":"kubelet is posting ready status"}],
		"nodeInfo":{"kubeletVersion":"v1.36.3"}}}`
	machineJSON := `{"metadata":{"name":"m","labels":{"machine.millwright.dev/set-name":"web-1"},
		"ownerReferences":[{"apiVersion":"machine.millwright.dev/v1alpha1","kind":"MachineSet","name":"web-1","uid":"u-1"}],
		"finalizers":["machine.millwright.dev/machine"]},
		"spec":{"class":{"name":"small"}},
		"status":{"phase":"Running","conditions":[{"type":"Ready","status":"True","reason":"Running","message":"the Node is Ready"}]}}`
	decode := func(in string, obj any) {
		t.Helper()
		if err := json.Unmarshal([]byte(in), obj); err != nil {
			t.Fatal(err)
		}
		if _, err := cacheTransform(obj); err != nil {
			t.Fatal(err)
		}
	}
	var n1, n2 corev1.Node
	decode(nodeJSON, &n1)
	decode(nodeJSON, &n2)
	var m1, m2 v1alpha1.Machine
	decode(machineJSON, &m1)
	decode(machineJSON, &m2)
	key := func(m map[string]string) string {
		for k := range m {
			return k
		}
		return ""
	}
	pairs := map[string][2]string{
		"a Node label key":           {key(n1.Labels), key(n2.Labels)},
		"a Node label value":         {n1.Labels["topology.kubernetes.io/zone"], n2.Labels["topology.kubernetes.io/zone"]},
		"a Node annotation key":      {key(n1.Annotations), key(n2.Annotations)},
		"a Node annotation value":    {n1.Annotations["kwok.x-k8s.io/node"], n2.Annotations["kwok.x-k8s.io/node"]},
		"a Node condition message":   {n1.Status.Conditions[0].Message, n2.Status.Conditions[0].Message},
		"a Node condition reason":    {n1.Status.Conditions[0].Reason, n2.Status.Conditions[0].Reason},
		"the kubelet version":        {n1.Status.NodeInfo.KubeletVersion, n2.Status.NodeInfo.KubeletVersion},
		"a Machine label value":      {m1.Labels["machine.millwright.dev/set-name"], m2.Labels["machine.millwright.dev/set-name"]},
		"a Machine's owner":          {m1.OwnerReferences[0].Name, m2.OwnerReferences[0].Name},
		"a Machine's owner UID":      {string(m1.OwnerReferences[0].UID), string(m2.OwnerReferences[0].UID)},
		"a Machine's finalizer":      {m1.Finalizers[0], m2.Finalizers[0]},
		"a Machine's class":          {m1.Spec.Class.Name, m2.Spec.Class.Name},
		"a Machine condition reason": {m1.Status.Conditions[0].Reason, m2.Status.Conditions[0].Reason},
		"a Machine condition text":   {m1.Status.Conditions[0].Message, m2.Status.Conditions[0].Message},
		"a Machine's phase":          {string(m1.Status.Phase), string(m2.Status.Phase)},
	}
	for what, p := range pairs {
		if p[0] == "" || p[0] != p[1] {
			t.Errorf("%s: decoded %q and %q", what, p[0], p[1])
		} else if unsafe.StringData(p[0]) != unsafe.StringData(p[1]) {
			t.Errorf("%s (%q): two copies in the cache, want one", what, p[0])
		}
	}
}

// A decoded slice keeps no spare room in the cache, and an object without
// the optional parts the transform reads goes through it unchanged.
func TestCacheTransformClipsSlices(t *testing.T) {
	conditions := make([]metav1.Condition, 5, 8)
	for i := range conditions {
		conditions[i] = metav1.Condition{Type: fmt.Sprintf("C%d", i), Status: metav1.ConditionTrue}
	}
	m := &v1alpha1.Machine{Status: v1alpha1.MachineStatus{Conditions: conditions}}
	if _, err := cacheTransform(m); err != nil {
		t.Fatal(err)
	}
	if got := m.Status.Conditions; len(got) != 5 || cap(got) != 5 || got[4].Type != "C4" {
		t.Errorf("conditions in the cache: len %d cap %d %v, want the five in no more room", len(got), cap(got), got)
	}
	n := &corev1.Node{Status: corev1.NodeStatus{Conditions: make([]corev1.NodeCondition, 1, 4)}}
	if _, err := cacheTransform(n); err != nil {
		t.Fatal(err)
	}
	if got := n.Status.Conditions; len(got) != 1 || cap(got) != 1 {
		t.Errorf("a Node's conditions in the cache: len %d cap %d, want 1 and 1", len(got), cap(got))
	}
	bare := &v1alpha1.Machine{ObjectMeta: metav1.ObjectMeta{Name: "bare"}}
	if _, err := cacheTransform(bare); err != nil || bare.Name != "bare" || bare.Spec.Class != nil {
		t.Errorf("a Machine without a class: %v, %+v", err, bare)
	}
}

// Machines with the same labels and annotations, as a set's are, hold one
// map of each once cached; a Machine with others keeps its own.
func TestCacheTransformSharesMachineMaps(t *testing.T) {
	decode := func(name, set string) *v1alpha1.Machine {
		t.Helper()
		in := fmt.Sprintf(`{"metadata":{"name":%q,"labels":{"machine.millwright.dev/set-name":%q,"pool":"web"},
			"annotations":{"machine.millwright.dev/set-template":"2kalw"}}}`, name, set)
		m := &v1alpha1.Machine{}
		if err := json.Unmarshal([]byte(in), m); err != nil {
			t.Fatal(err)
		}
		if _, err := cacheTransform(m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	a, b, other := decode("a", "web-1"), decode("b", "web-1"), decode("c", "web-2")
	same := func(x, y map[string]string) bool {
		return reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer()
	}
	if !same(a.Labels, b.Labels) || !same(a.Annotations, b.Annotations) {
		t.Errorf("two Machines of one set hold two maps of labels or annotations, want one of each")
	}
	if same(a.Labels, other.Labels) || other.Labels["machine.millwright.dev/set-name"] != "web-2" {
		t.Errorf("a Machine of another set: labels %v, want its own", other.Labels)
	}
	if !same(a.Annotations, other.Annotations) || b.Labels["pool"] != "web" || b.Annotations["machine.millwright.dev/set-template"] != "2kalw" {
		t.Errorf("labels %v, annotations %v: want the decoded ones, the annotations shared by all three", b.Labels, b.Annotations)
	}
}

// The table of shared maps holds at most sharedMapsMax maps, and answers
// a map equal to the one asked with, whatever it held before.
func TestSharedMapsAreBounded(t *testing.T) {
	table := mapTable{byContent: map[string]map[string]string{}}
	for i := range sharedMapsMax + 10 {
		want := map[string]string{"machine": fmt.Sprint(i)}
		if got := table.share(want); !maps.Equal(got, want) {
			t.Fatalf("share(%v) = %v", want, got)
		}
		if len(table.byContent) > sharedMapsMax {
			t.Fatalf("%d maps in the table, want at most %d", len(table.byContent), sharedMapsMax)
		}
	}
	// Length before each string: no two maps read alike.
	if mapContent(map[string]string{"a": "b", "c": ""}) == mapContent(map[string]string{"a": "b:c:"}) {
		t.Errorf("two different maps have the same content key")
	}
}

// A Machine's Node name, its hostname address and a Node's hostname label
// and Machine annotation are its name's string, not copies of it.
func TestCacheTransformSharesTheName(t *testing.T) {
	m := &v1alpha1.Machine{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"web-1-x"},"status":{"nodeName":"web-1-x","nodeRef":{"name":"web-1-x"},
		"addresses":[{"type":"Hostname","address":"web-1-x"},{"type":"InternalIP","address":"10.0.0.1"}]}}`), m); err != nil {
		t.Fatal(err)
	}
	n := &corev1.Node{}
	if err := json.Unmarshal([]byte(`{"metadata":{"name":"web-1-x","labels":{"kubernetes.io/hostname":"web-1-x"},
		"annotations":{"machine.millwright.dev/machine":"web-1-x"}},
		"status":{"addresses":[{"type":"Hostname","address":"web-1-x"}]}}`), n); err != nil {
		t.Fatal(err)
	}
	for _, o := range []any{m, n} {
		if _, err := cacheTransform(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ what, s, name string }{
		{"the Machine's nodeName", m.Status.NodeName, m.Name},
		{"its nodeRef", m.Status.NodeRef.Name, m.Name},
		{"its hostname address", m.Status.Addresses[0].Address, m.Name},
		{"the Node's hostname label", n.Labels["kubernetes.io/hostname"], n.Name},
		{"its Machine annotation", n.Annotations["machine.millwright.dev/machine"], n.Name},
		{"its hostname address", n.Status.Addresses[0].Address, n.Name},
	} {
		if c.s != c.name || unsafe.StringData(c.s) != unsafe.StringData(c.name) {
			t.Errorf("%s %q: a copy of the name, want the name's string", c.what, c.s)
		}
	}
	if m.Status.Addresses[1].Address != "10.0.0.1" {
		t.Errorf("another address: %q", m.Status.Addresses[1].Address)
	}
}
