package machinedeployment

import (
	"encoding/binary"
	"encoding/json"
	"hash/fnv"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// restartDue returns the deployment's spec.rolloutAfter once it has
// passed, else nil.
func restartDue(md *v1alpha1.MachineDeployment, now time.Time) *metav1.Time {
	if t := md.Spec.RolloutAfter; t != nil && !now.Before(t.Time) {
		return t
	}
	return nil
}

// isCurrentSet reports whether ms makes the deployment's current Machines:
// the same Machines as its template and, once spec.rolloutAfter has
// passed, created to answer that restart or a later one (the
// rollout-after annotation createNewSet records). The set's own
// creationTimestamp is not compared: it comes from the API server's
// clock, rolloutAfter's passing from the manager's.
func isCurrentSet(ms *v1alpha1.MachineSet, md *v1alpha1.MachineDeployment, now time.Time) bool {
	if !sameMachines(&ms.Spec.Template, &md.Spec.Template) {
		return false
	}
	due := restartDue(md, now)
	if due == nil {
		return true
	}
	return !answeredRestart(ms).Before(due.Time)
}

// answeredRestart is the spec.rolloutAfter a set was created to answer
// (its rollout-after annotation); the zero time for none, or one that
// cannot be read.
func answeredRestart(ms *v1alpha1.MachineSet) time.Time {
	t, err := time.Parse(time.RFC3339, ms.Annotations[v1alpha1.RolloutAfterAnnotation])
	if err != nil {
		return time.Time{}
	}
	return t
}

// templateHash names the MachineSet of a template: a short hash of its
// replacing part, with collisionCount mixed in once a name was taken and
// restartedAt (a passed spec.rolloutAfter) mixed in so the set that
// replaces the older ones of the same template gets a name of its own.
//
// The replacing part is hashed as JSON, which sorts map keys and omits
// empty optional fields, so the hash stays the same when a Millwright
// version adds a field the template does not set.
func templateHash(t *v1alpha1.MachineTemplateSpec, collisionCount *int32, restartedAt *metav1.Time) string {
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
	if restartedAt != nil {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(restartedAt.Unix()))
		_, _ = h.Write(b[:])
	}
	// The same alphabet as Kubernetes' pod-template-hash: no vowels, so no
	// words, and nothing a label value refuses.
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}
