package machinedeployment

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"strconv"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/rand"

	"github.com/millwright-dev/millwright/api/v1alpha1"
)

// replacingPart is the part of a template spec whose change needs new
// Machines: everything but the fields the MachineSet controller updates in
// place on existing Machines.
func replacingPart(spec *v1alpha1.MachineSpec) v1alpha1.MachineSpec {
	out := *spec.DeepCopy()
	out.NodeTemplate = v1alpha1.NodeTemplateSpec{}
	out.Lifecycle = v1alpha1.MachineLifecycle{}
	return out
}

// sameMachines reports whether two templates make the same Machines, apart
// from what changes in place.
func sameMachines(a, b *v1alpha1.MachineTemplateSpec) bool {
	return equality.Semantic.DeepEqual(replacingPart(&a.Spec), replacingPart(&b.Spec))
}

// templateHash names the MachineSet of a template: a short hash of its
// replacing part, with collisionCount mixed in once a name was taken.
//
// The replacing part is hashed as JSON, which sorts map keys and omits
// empty optional fields, so the hash stays the same when a Millwright
// version adds a field the template does not set.
func templateHash(t *v1alpha1.MachineTemplateSpec, collisionCount *int32) string {
	part := replacingPart(&t.Spec)
	data, err := json.Marshal(&part)
	if err != nil {
		// A MachineSpec is plain data; encoding it cannot fail.
		panic("encoding a MachineSpec: " + err.Error())
	}
	h := fnv.New32a()
	_, _ = h.Write(data)
	if collisionCount != nil {
		var b [4]byte
		binary.LittleEndian.PutUint32(b[:], uint32(*collisionCount))
		_, _ = h.Write(b[:])
	}
	// The same alphabet as Kubernetes' pod-template-hash: no vowels, so no
	// words, and nothing a label value refuses.
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}
